import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { principalMapper } from '../../src/security/ssl-principal-mapper.js';

describe('ssl.principal.mapping.rules', () => {
  it('maps names as Kafka’s SslPrincipalMapper does', () => {
    const mapper = principalMapper(
      [
        'RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L',
        'RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L',
        'RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U',
        'RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U',
        'DEFAULT',
      ].join(', '),
    );
    assert.equal(mapper('CN=Duke,OU=ServiceUsers,O=Org,C=US'), 'duke');
    assert.equal(mapper('CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US'), 'duke@sme');
    assert.equal(mapper('cn=duke,ou=sme,dc=mycp,dc=com'), 'DUKE@SME');
    assert.equal(mapper('cN=duke,OU=JavaSoft,O=Sun Microsystems'), 'DUKE');
    assert.equal(mapper('OU=JavaSoft,O=Sun Microsystems,C=US'), 'OU=JavaSoft,O=Sun Microsystems,C=US');
  });

  it('keeps the name with DEFAULT (the default) and has none when no rule applies', () => {
    assert.equal(principalMapper(undefined)('CN=client,OU=eng'), 'CN=client,OU=eng');
    assert.equal(principalMapper('RULE:^CN=(.*?),OU=ops$/$1/')('CN=client,OU=eng'), null);
  });

  it('refuses the rules Kafka refuses', () => {
    for (const bad of [
      'default',
      'DEFAUL',
      'DEFAULT/L',
      'DEFAULT/U',
      'RULE:CN=(.*?),OU=ServiceUsers.*/$1',
      'rule:^CN=(.*?),OU=ServiceUsers.*$/$1/',
      'RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U',
      'RULE:^CN=(.*?),OU=ServiceUsers.*$/L',
      'RULE:^CN=(.*?),OU=ServiceUsers.*$/U',
      'RULE:^CN=(.*?),OU=ServiceUsers.*$/LU',
    ]) {
      assert.throws(() => principalMapper(bad), /Invalid rule/, bad);
    }
  });
});
