/**
 * Kafka's `sasl.jaas.config` values (JAAS configuration entries, as Kafka's JaasConfig parses
 * them): `<LoginModule class> <flag> key="value" key=value ...;`. Skiff reads the options of the
 * PLAIN and SCRAM login modules: `username` / `password` (the client's own credentials) and, on
 * a broker's PLAIN listener, `user_<name>="<password>"` (the users PLAIN accepts).
 */

export interface JaasLoginModule {
  readonly loginModule: string;
  readonly flag: 'required' | 'requisite' | 'sufficient' | 'optional';
  readonly options: ReadonlyMap<string, string>;
}

export const PLAIN_LOGIN_MODULE = 'org.apache.kafka.common.security.plain.PlainLoginModule';
export const SCRAM_LOGIN_MODULE = 'org.apache.kafka.common.security.scram.ScramLoginModule';

const FLAGS = new Set(['required', 'requisite', 'sufficient', 'optional']);

/** Parses a JAAS configuration value; throws with Kafka's wording on anything malformed. */
export function parseJaasConfig(text: string): JaasLoginModule[] {
  const tokens = tokenize(text);
  const modules: JaasLoginModule[] = [];
  let i = 0;
  const next = (): Token | undefined => tokens[i++];
  while (i < tokens.length) {
    const name = next();
    if (name?.kind !== 'word') throw new Error(`Unexpected token in JAAS config: ${describe(name)}`);
    const flag = next();
    if (flag?.kind !== 'word' || !FLAGS.has(flag.text.toLowerCase())) {
      throw new Error(`Invalid control flag '${flag?.text ?? ''}' in JAAS config`);
    }
    const options = new Map<string, string>();
    for (;;) {
      const t = next();
      if (t === undefined) throw new Error('Expected ";" at the end of a login module in JAAS config');
      if (t.kind === ';') break;
      if (t.kind !== 'word') throw new Error(`Unexpected token in JAAS config: ${describe(t)}`);
      const eq = next();
      const value = next();
      if (eq?.kind !== '=' || (value?.kind !== 'word' && value?.kind !== 'string')) {
        throw new Error(`Value not specified for key '${t.text}' in JAAS config`);
      }
      options.set(t.text, value.text);
    }
    modules.push({
      loginModule: name.text,
      flag: flag.text.toLowerCase() as JaasLoginModule['flag'],
      options,
    });
  }
  return modules;
}

/**
 * The one login module of a `sasl.jaas.config` property (Kafka requires exactly one there).
 */
export function parseSingleLoginModule(text: string, property: string): JaasLoginModule {
  const modules = parseJaasConfig(text);
  if (modules.length !== 1) {
    throw new Error(
      `JAAS config property ${property} contains ${modules.length} login modules, should be 1 module`,
    );
  }
  return modules[0]!;
}

type Token = { kind: 'word' | 'string'; text: string } | { kind: '=' | ';'; text: string };

function describe(t: Token | undefined): string {
  return t === undefined ? 'end of text' : JSON.stringify(t.text);
}

function tokenize(text: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '=' || c === ';') {
      out.push({ kind: c, text: c });
      i++;
    } else if (c === '"' || c === "'") {
      let s = '';
      i++;
      for (;;) {
        if (i >= text.length) throw new Error('Unterminated quoted string in JAAS config');
        const d = text[i++]!;
        if (d === c) break;
        if (d === '\\' && i < text.length) {
          const e = text[i++]!;
          s += e === 'n' ? '\n' : e === 't' ? '\t' : e === 'r' ? '\r' : e;
        } else {
          s += d;
        }
      }
      out.push({ kind: 'string', text: s });
    } else {
      let j = i;
      while (j < text.length && !/[\s=;"']/.test(text[j]!)) j++;
      out.push({ kind: 'word', text: text.slice(i, j) });
      i = j;
    }
  }
  return out;
}

/** `username` and `password` of a client login module (PlainLoginModule or ScramLoginModule). */
export function jaasClientCredentials(
  text: string,
  property = 'sasl.jaas.config',
): { username: string; password: string } {
  const m = parseSingleLoginModule(text, property);
  const username = m.options.get('username');
  const password = m.options.get('password');
  if (username === undefined || password === undefined) {
    throw new Error(`${property}: the login module needs username and password options`);
  }
  return { username, password };
}

/** The users a broker's PLAIN login module accepts: its `user_<name>` options. */
export function jaasPlainUsers(module: JaasLoginModule): Map<string, string> {
  const users = new Map<string, string>();
  for (const [k, v] of module.options) if (k.startsWith('user_')) users.set(k.slice('user_'.length), v);
  return users;
}
