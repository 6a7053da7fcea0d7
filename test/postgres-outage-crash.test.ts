import { describePostgresOutage } from './support/postgres-outage.ts';

describePostgresOutage('crashed (SIGKILL), with the queue in Redis: the instances live on, answer 503, and serve again within 2 s of its return', 'SIGKILL', { redis: true });
