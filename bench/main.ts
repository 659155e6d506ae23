import { benchBroker } from './broker.js';
import { benchFetchEncode } from './fetch-encode.js';
import { benchMetadata } from './metadata.js';
import { benchRecords } from './records.js';
import { benchStorage } from './storage.js';
import { benchThrottle } from './throttle.js';

/** Every benchmark, run in order by `npm run bench`. Add new ones to this list. */
const benches: (() => Promise<unknown>)[] = [
  benchRecords,
  benchFetchEncode,
  benchStorage,
  benchBroker,
  benchMetadata,
  benchThrottle,
];

for (const bench of benches) await bench();
