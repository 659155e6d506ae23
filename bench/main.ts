import { benchFetchEncode } from './fetch-encode.js';
import { benchRecords } from './records.js';

/** Every benchmark, run in order by `npm run bench`. Add new ones to this list. */
const benches: (() => Promise<unknown>)[] = [benchRecords, benchFetchEncode];

for (const bench of benches) await bench();
