/**
 * Parts of a task's result that the engines produce and the task record reports: the adapter
 * contract (providers/spec.ts) and the wire format (tasks/task-record.ts) both use them.
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
