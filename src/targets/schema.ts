import { z } from 'zod';

/** POST /targets body (SPEC §6.6): types are checked (400) before emptiness rules (422). */
export const associateTeamsBody = z.object(
  {
    identifier: z.string({ error: 'identifier must be a string' }).nullish(),
    teams: z
      .array(z.string({ error: 'teams must be an array of strings' }), { error: 'teams must be an array of strings' })
      .nullish(),
  },
  { error: 'request body must be a JSON object' },
);
