# vulndb service image: one image for every server-mode role (see docker-compose.yml).
#   api:     node dist/src/cli/main.js serve api     (database API :8080, metrics API :8081) — the CMD
#   worker:  node dist/src/cli/main.js serve worker  (BullMQ ingest worker)
#   migrate: node dist/src/cli/main.js migrate       (one-shot)
# Every role needs CLICKHOUSE_URL and REDIS_URL (SPEC §10). The admin listener (ADMIN_PORT, 9464)
# serves /healthz, /readyz and /metrics.
#
# Two stages:
# - build compiles src/ and workers/ to JavaScript (`npm run build`, tsconfig.build.json → dist/);
#   it installs every dependency, dev and optional, because the compiler needs the types of all of
#   them (chdb's included; --ignore-scripts: nothing needs to run to compile);
# - production holds the compiled code, sql/ and the production dependencies only:
#   `--omit=dev` leaves out tsx, typescript and vitest, and `--omit=optional` leaves out chdb, the
#   embedded engine (its native library is about 560 MB), which server mode never loads (the
#   storage gateway imports it only when CLICKHOUSE_URL is unset, and then says that it is
#   missing). Without chdb nothing native is left, so the image builds and runs natively on
#   amd64 and arm64 alike.
#
# node runs as PID 1's only child (compose sets `init: true`) and is the process that receives
# SIGTERM: `vulndb serve` stops gracefully on it (stops accepting HTTP, finishes the jobs and
# batch in flight, logs "stopped", exits 0). No npm or shell sits in between to swallow it.

FROM node:22-bookworm-slim AS build
WORKDIR /app
ENV NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY workers ./workers
RUN npm run build
# The triage page (SPEC §15): bundled by esbuild into ui/dist; src/ui/routes.ts serves it from
# two levels above its compiled self, dist/ui/dist.
COPY ui ./ui
RUN npm run build:ui && mkdir -p dist/ui && cp -r ui/dist dist/ui/dist

FROM node:22-bookworm-slim AS production
# The source commit, shown by vulndb_build_info: `docker compose build --build-arg VULNDB_COMMIT=$(git rev-parse --short HEAD)`.
ARG VULNDB_COMMIT=""
ENV VULNDB_COMMIT=${VULNDB_COMMIT}
ENV NODE_ENV=production \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    DATA_DIR=/app/data
WORKDIR /app

# Dependencies first, so a source edit reuses this layer.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --no-audit && npm cache clean --force

# src/storage/migrate.ts finds sql/ three levels above dist/src/storage/migrate.js: /app/sql.
COPY sql ./sql
COPY --from=build /app/dist ./dist
# `vulndb` on PATH for the operator commands (`docker compose exec worker vulndb jobs failed`):
# bin/vulndb.mjs runs dist/src/cli/main.js when there is no src/.
COPY bin ./bin
RUN ln -s /app/bin/vulndb.mjs /usr/local/bin/vulndb

# DATA_DIR is written only when the metrics API generates its token secret (JWT_SECRET unset;
# compose always sets it); it belongs to the unprivileged user either way.
RUN mkdir -p /app/data && chown node:node /app/data

USER node

EXPOSE 8080 8081 9464

CMD ["node", "--max-semi-space-size=64", "dist/src/cli/main.js", "serve", "api"]
