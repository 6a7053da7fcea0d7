import { describePostgresOutage } from './support/postgres-outage.ts';

describePostgresOutage('stopped with a fast shutdown (SIGINT), with the queue in PostgreSQL: the instances live on, answer 503, and serve again within 2 s of its return', 'SIGINT', { redis: false });
