/**
 * Java .properties files as Kafka reads server.properties (java.util.Properties.load): comments
 * with # or !, key and value separated by =, : or whitespace, backslash line continuations and
 * escapes (\t, \n, \uXXXX, \= ...). Later keys override earlier ones. Pure: text in, map out.
 */
export function parseProperties(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const lines = text.split(/\r\n|\r|\n/);
  for (let i = 0; i < lines.length; i++) {
    let logical = lines[i]!.replace(/^[ \t\f]+/, '');
    if (logical === '' || logical.startsWith('#') || logical.startsWith('!')) continue;
    // An odd number of trailing backslashes continues the line; leading blanks of the next are dropped.
    while (endsWithContinuation(logical) && i + 1 < lines.length) {
      logical = logical.slice(0, -1) + lines[++i]!.replace(/^[ \t\f]+/, '');
    }
    if (endsWithContinuation(logical)) logical = logical.slice(0, -1);
    const [key, value] = splitKeyValue(logical);
    out.set(unescapeProperty(key), unescapeProperty(value));
  }
  return out;
}

function endsWithContinuation(line: string): boolean {
  let n = 0;
  for (let j = line.length - 1; j >= 0 && line[j] === '\\'; j--) n++;
  return n % 2 === 1;
}

function splitKeyValue(line: string): [string, string] {
  let j = 0;
  while (j < line.length) {
    const c = line[j]!;
    if (c === '\\') {
      j += 2;
      continue;
    }
    if (c === '=' || c === ':' || c === ' ' || c === '\t' || c === '\f') break;
    j++;
  }
  const key = line.slice(0, j);
  let k = j;
  while (k < line.length && /[ \t\f]/.test(line[k]!)) k++;
  if (k < line.length && (line[k] === '=' || line[k] === ':')) k++;
  while (k < line.length && /[ \t\f]/.test(line[k]!)) k++;
  return [key, line.slice(k)];
}

function unescapeProperty(s: string): string {
  if (!s.includes('\\')) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c !== '\\' || i + 1 >= s.length) {
      out += c;
      continue;
    }
    const n = s[++i]!;
    if (n === 't') out += '\t';
    else if (n === 'n') out += '\n';
    else if (n === 'r') out += '\r';
    else if (n === 'f') out += '\f';
    else if (n === 'u' && /^[0-9a-fA-F]{4}$/.test(s.slice(i + 1, i + 5))) {
      out += String.fromCharCode(Number.parseInt(s.slice(i + 1, i + 5), 16));
      i += 4;
    } else out += n;
  }
  return out;
}

/** A properties map as a plain record, for ConfigLayers.staticProps. */
export function propertiesToRecord(props: ReadonlyMap<string, string>): Record<string, string> {
  return Object.fromEntries(props);
}
