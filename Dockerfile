# vulndb service image: one image for both server-mode roles.
#   api:    npm run start:api     (database API :8080, metrics API :8081) — the default CMD
#   worker: npm run start:worker  (BullMQ ingest worker, no listener)
# Both need CLICKHOUSE_URL and REDIS_URL (see docker-compose.yml and SPEC §10).
#
# There is no build step: the TypeScript sources run through tsx, which is a runtime dependency,
# so production dependencies (`npm ci --omit=dev`) are everything the service needs.
# Debian (glibc), not Alpine: the chdb native library (loaded when the storage gateway is imported,
# even in server mode) is published for glibc only.
FROM node:20-bookworm-slim

ENV NODE_ENV=production \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    DATA_DIR=/app/data

WORKDIR /app

# Dependencies first, so source edits reuse this layer.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force

COPY tsconfig.json ./
COPY bin ./bin
COPY sql ./sql
COPY workers ./workers
COPY src ./src

# DATA_DIR is only written in embedded mode (no CLICKHOUSE_URL) or when the metrics API generates
# its token secret because JWT_SECRET is unset; it belongs to the unprivileged user either way.
RUN mkdir -p /app/data && chown node:node /app/data

USER node

EXPOSE 8080 8081

CMD ["npm", "run", "start:api"]
