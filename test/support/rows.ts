import type { TaskRow } from '../../src/storage/schema.ts';

/** A task row as a submit stores it, leased to `worker-a`: for tests that write tasks through the repository. */
export function taskRow(id: string): TaskRow {
  return {
    id, request_id: `req-${id}`, owner_id: 'owner', client_id: null, endpoint: 'images.generations', model: 'm', provider: 'p', output_type: 'image',
    cancellable: 1, status: 'submitted', progress: 0, version: 1, message: null, error_message: null, input: '{}', result: null, saved_state: null,
    trace_context: null, callback_url: null, callback_events: null, deadline_at: null, server: null, attempts: 1, lease_owner: 'worker-a', lease_until: 9_999,
    created_at: 1, updated_at: 1, started_at: null, finished_at: null, token_id: null, reserved_credits: 0, event_seq: 1, team_id: null,
  };
}
