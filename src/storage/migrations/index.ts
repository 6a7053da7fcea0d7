import type { Migration } from 'kysely';
import * as foundation from './0001-foundation.ts';
import * as assets from './0002-assets.ts';
import * as assetUniqueness from './0003-asset-uniqueness.ts';
import * as tasks from './0004-tasks.ts';
import * as taskSavedState from './0005-task-saved-state.ts';
import * as mesh3d from './0006-mesh3d.ts';
import * as digitalHuman from './0007-digital-human.ts';
import * as conversations from './0008-conversations.ts';
import * as agents from './0009-agents.ts';
import * as workerHeartbeats from './0010-worker-heartbeats.ts';
import * as agentApprovals from './0014-agent-approvals.ts';
import * as limitsUsage from './0018-limits-usage.ts';
import * as idempotencyKeys from './0019-idempotency-keys.ts';
import * as channelDisables from './0020-channel-disables.ts';
import * as openaiResponses from './0021-openai-responses.ts';
import * as taskTraceContext from './0025-task-trace-context.ts';
import * as taskCallbackEvents from './0026-task-callback-events.ts';
import * as taskDeadline from './0027-task-deadline.ts';
import * as taskModelQueue from './0028-task-model-queue.ts';
import * as taskEvents from './0031-task-events.ts';
import * as cachedTokens from './0036-cached-tokens.ts';
import * as batches from './0032-batches.ts';
import * as ledgerBatchId from './0033-ledger-batch-id.ts';
import * as mcp from './0035-mcp.ts';
import * as teams from './0037-teams.ts';
import * as consoleSessions from './0038-console-sessions.ts';
import * as ledgerPartialIndexes from './0039-ledger-partial-indexes.ts';
import * as configRecords from './0029-config-records.ts';
import * as auditLog from './0030-audit-log.ts';

/** Every migration, keyed by a sortable name; the same set runs on SQLite and PostgreSQL. */
export const migrations: Record<string, Migration> = {
  '0001_foundation': foundation,
  '0002_assets': assets,
  '0003_asset_uniqueness': assetUniqueness,
  '0004_tasks': tasks,
  '0005_task_saved_state': taskSavedState,
  '0006_mesh3d': mesh3d,
  '0007_digital_human': digitalHuman,
  '0008_conversations': conversations,
  '0009_agents': agents,
  '0010_worker_heartbeats': workerHeartbeats,
  '0014_agent_approvals': agentApprovals,
  '0018_limits_usage': limitsUsage,
  '0019_idempotency_keys': idempotencyKeys,
  '0020_channel_disables': channelDisables,
  '0021_openai_responses': openaiResponses,
  '0025_task_trace_context': taskTraceContext,
  '0026_task_callback_events': taskCallbackEvents,
  '0027_task_deadline': taskDeadline,
  '0028_task_model_queue': taskModelQueue,
  '0031_task_events': taskEvents,
  '0036_cached_tokens': cachedTokens,
  '0032_batches': batches,
  '0033_ledger_batch_id': ledgerBatchId,
  '0035_mcp': mcp,
  '0037_teams': teams,
  '0038_console_sessions': consoleSessions,
  '0039_ledger_partial_indexes': ledgerPartialIndexes,
  '0029_config_records': configRecords,
  '0030_audit_log': auditLog,
};
