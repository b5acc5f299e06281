import { z } from 'zod';
import { safeText } from '../domain/text.js';
import { isUuid } from '../domain/uuid.js';
import { EVENT_TYPES } from '../queue/contract.js';

/** The bodies of the webhook endpoints (SPEC §9.1). */

const httpUrl = safeText({ error: 'url: must be a string' })
  .max(2048, { error: 'url: at most 2048 characters' })
  .refine(
    (text) => {
      try {
        const url = new URL(text);
        return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
      } catch {
        return false;
      }
    },
    { error: 'url: must be an http or https URL' },
  );

/** SPEC §9.1: the body of POST /webhooks. */
export const subscriptionBody = z.object(
  {
    url: httpUrl,
    secret: safeText({ error: 'secret: must be a string' }).max(1024, { error: 'secret: at most 1024 characters' }).nullish(),
    teams: z
      .array(safeText().refine(isUuid, { error: 'teams: each must be a team id (UUID)' }), { error: 'teams: must be an array of team ids' })
      .max(1000, { error: 'teams: at most 1000' })
      .nullish(),
    events: z.array(z.enum(EVENT_TYPES, { error: `events: each must be one of ${EVENT_TYPES.join(', ')}` })).nullish(),
  },
  { error: 'the body must be a JSON object' },
);

export const webhookView = z
  .object({
    id: z.string().describe('Subscription UUID'),
    url: z.string().describe('http or https URL the events are POSTed to'),
    teams: z.array(z.string()).describe('Team UUIDs whose targets’ events are sent; empty = every team'),
    events: z.array(z.enum(EVENT_TYPES)).describe('Event types sent; empty = every type'),
    created_at: z.string().describe('RFC 3339'),
  })
  .strict()
  .describe('A subscription (its secret is never returned)');
