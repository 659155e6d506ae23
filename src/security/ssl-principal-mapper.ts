/**
 * ssl.principal.mapping.rules as Kafka's SslPrincipalMapper reads them: a comma-separated list of
 * `DEFAULT` (the distinguished name as it is) and `RULE:pattern/replacement/[LU]` (when the
 * pattern matches the whole name, the name with every match replaced, `$n` naming groups,
 * optionally lower- or upper-cased). The first rule that applies gives the principal name; a name
 * no rule applies to has no principal (the connection is refused).
 */

const RULE = String.raw`(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)`;
const SPLITTER = new RegExp(String.raw`\s*(${RULE})\s*(,\s*|$)`, 'g');
const PARSER = new RegExp(`^(?:${RULE})`);

type Rule =
  | { readonly kind: 'default' }
  | {
      readonly kind: 'rule';
      readonly whole: RegExp;
      readonly every: RegExp;
      readonly replacement: string;
      readonly caseChange: '' | 'L' | 'U';
    };

export type PrincipalMapper = (distinguishedName: string) => string | null;

function parseRules(text: string): Rule[] {
  const rules: Rule[] = [];
  for (const split of text.trim().matchAll(SPLITTER)) {
    const rule = split[1]!;
    const m = PARSER.exec(rule);
    if (m === null) throw new Error(`Invalid rule: ${rule}`);
    if (m[0].length !== rule.length)
      throw new Error(`Invalid rule: \`${rule}\`, unmatched substring: \`${rule.slice(m[0].length)}\``);
    if (m[1] !== undefined) rules.push({ kind: 'default' });
    else if (m[2] !== undefined) {
      let whole: RegExp;
      let every: RegExp;
      try {
        whole = new RegExp(`^(?:${m[2]})$`);
        every = new RegExp(m[2], 'g');
      } catch (e) {
        throw new Error(`Invalid rule: ${rule}: ${(e as Error).message}`);
      }
      rules.push({
        kind: 'rule',
        whole,
        every,
        replacement: m[4] ?? '',
        caseChange: (m[6] ?? '') as '' | 'L' | 'U',
      });
    }
    // An empty rule is skipped, as Kafka skips it.
  }
  return rules;
}

/** The mapper of ssl.principal.mapping.rules (Kafka's default: DEFAULT); bad rules throw. */
export function principalMapper(rulesText: string | undefined): PrincipalMapper {
  const rules = parseRules(rulesText ?? 'DEFAULT');
  return (dn) => {
    for (const r of rules) {
      if (r.kind === 'default') return dn;
      if (!r.whole.test(dn)) continue;
      const name = dn.replace(r.every, r.replacement);
      return r.caseChange === 'L' ? name.toLowerCase() : r.caseChange === 'U' ? name.toUpperCase() : name;
    }
    return null;
  };
}
