// `node services/scheduler/dist/migrate.js`: creates the indexes of this service's database.
import { serviceEnvShape } from '@rs/config';
import { runMigration } from '@rs/runtime';
import { z } from 'zod';
import { collectionIndexes } from './store/indexes';

runMigration('scheduler', z.object(serviceEnvShape('scheduler')), { indexes: collectionIndexes });
