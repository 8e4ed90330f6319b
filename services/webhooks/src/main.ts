import { runMain } from '@rs/runtime';
import { start } from './service';

runMain('webhooks', start);
