/**
 * Parts of a task's result that the engines produce and the task record reports: the adapter
 * contract (providers/spec.ts) and the wire format (core/task-status-record.ts) both use them.
 */

/** The result's mediaSize. */
export interface MediaSize {
  type: string;
  width: number;
  height: number;
  status: number;
}

export interface Usage {
  total_tokens: number;
  input_tokens: number;
  output_tokens: number;
}

export interface BillingEntry {
  billing_type: string;
  billing_model: Record<string, unknown>;
  generateParams: Record<string, unknown>;
  platform: { name: string; id: string; code: string };
  billing_params: Record<string, unknown>;
  result: { token: number };
}

export interface NodeStatus {
  executeId?: string;
  nodeId?: string;
  customWorkflowId?: string;
  status?: string;
  message?: string;
  result?: Record<string, unknown>;
  nodeData?: { params: Record<string, unknown> };
}

/** One try of a call or task on a channel that did not serve it, and why. */
export interface RoutingAttempt {
  model: string;
  provider: string;
  /** null: no channel of the model was available. */
  channel: string | null;
  error: string;
}

/**
 * generate_info.routing: the model, provider and channel that served the work (or tried it
 * last), every failed try before, and what moving to a fallback model changed in the request.
 */
export interface RoutingRecord {
  model: string;
  provider: string;
  channel: string;
  attempts: RoutingAttempt[];
  warnings: string[];
}
