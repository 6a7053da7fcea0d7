import { fromMicro } from '../limits/limits.ts';
import type { OverviewRepo, WindowSums } from '../storage/repos/overview-repo.ts';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

export interface OverviewWindow {
  window: '1h' | '24h' | '7d';
  requests: number;
  errors: number;
  /** Credits spent. */
  cost: number;
  latency_ms_avg: number | null;
  tasks_by_status: Record<string, number>;
}

/**
 * The console's first page in one answer: calls, errors, latency, spend and tasks by status over
 * the last hour, day and week. The hour and the day are read from the ledger's rows; the week
 * from its daily aggregate (the last seven UTC days, today included), so a large ledger is
 * never scanned; the week has no latency for that reason.
 */
export class OverviewService {
  private readonly repo: OverviewRepo;

  constructor(repo: OverviewRepo) {
    this.repo = repo;
  }

  async overview(userId: string | undefined, now = Date.now()): Promise<{ windows: OverviewWindow[] }> {
    const weekStart = now - 7 * DAY_MS;
    const firstDay = new Date(now - 6 * DAY_MS).toISOString().slice(0, 10);
    const [[hour, day], week, tasksHour, tasksDay, tasksWeek] = await Promise.all([
      this.repo.recentSums([now - HOUR_MS, now - DAY_MS], userId),
      this.repo.dailySums(firstDay, userId),
      this.repo.tasksByStatus(now - HOUR_MS, userId),
      this.repo.tasksByStatus(now - DAY_MS, userId),
      this.repo.tasksByStatus(weekStart, userId),
    ]);
    const view = (window: OverviewWindow['window'], sums: WindowSums, tasks: Record<string, number>): OverviewWindow => ({
      window,
      requests: sums.requests,
      errors: sums.errors,
      cost: fromMicro(sums.cost),
      latency_ms_avg: sums.latency_ms_avg,
      tasks_by_status: tasks,
    });
    return { windows: [view('1h', hour, tasksHour), view('24h', day, tasksDay), view('7d', week, tasksWeek)] };
  }
}
