import { after, before, describe } from 'node:test';
import { Deployment, deploymentTest, frozenInstanceKeepsItsTask, survivorTakesOverWithin10s } from './support/multi-instance.ts';

describe('two instances on one PostgreSQL schema without Redis (the database queue)', () => {
  let deployment: Deployment | { skip: string } | undefined;
  before(async () => {
    deployment = await Deployment.start(false);
    if ('skip' in deployment) process.stdout.write(`# ${deployment.skip}\n`);
  });
  after(async () => {
    if (deployment && !('skip' in deployment)) await deployment.stop();
  });

  deploymentTest(() => deployment, 'an instance frozen for less than the heartbeat TTL keeps its task', (d) => frozenInstanceKeepsItsTask(d));
  // Last: it leaves one instance standing.
  deploymentTest(() => deployment, 'the task of an instance that dies is taken over by the other within 10 s', (d) => survivorTakesOverWithin10s(d));
});
