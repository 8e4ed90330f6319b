import { describe, expect, it } from 'vitest';
import { parseBasic } from '../src/auth/basic';

const header = (text: string) => `Basic ${Buffer.from(text, 'utf8').toString('base64')}`;

// docs/api.md "Authentication": what an `Authorization: Basic` header must be to name credentials.
describe('Basic credentials (RFC 7617)', () => {
  it('when the header is well formed, then it names the client and its secret, the secret split at the first colon', () => {
    expect(parseBasic(header('grantor-a:s3cret'))).toEqual({ clientId: 'grantor-a', secret: 's3cret' });
    expect(parseBasic(header('grantor-a:with:colons'))).toEqual({ clientId: 'grantor-a', secret: 'with:colons' });
    expect(parseBasic(`basic   ${header('a:b').slice('Basic '.length)}`)).toEqual({ clientId: 'a', secret: 'b' });
    // Text beyond ASCII is UTF-8, as RFC 7617 lets a server say; letters of any script are allowed.
    expect(parseBasic(header('élodie:mot de passe 🔑'))).toEqual({ clientId: 'élodie', secret: 'mot de passe 🔑' });
  });

  it('when the id or the secret holds a control character, then the header names nothing', () => {
    for (const text of [
      'grantor-a:s3cret\u0000',
      'grantor-a:s3\ncret',
      'grant\u0001or-a:s3cret',
      'grantor-a:\u007f',
      'a\u001f:b',
    ])
      expect(parseBasic(header(text)), JSON.stringify(text)).toBeNull();
  });

  it('when the header is not well-formed Basic credentials, then it names nothing', () => {
    const malformed = [
      undefined,
      '',
      'Bearer abc',
      header('no-colon'),
      header(':secret-without-id'),
      header('id-without-secret:'),
      'Basic not*base64',
      'Basic YWJj', // "abc": no colon
      'Basic YTpi=', // not a multiple of four
      `Basic ${Buffer.from([0x61, 0x3a, 0xff, 0xfe]).toString('base64')}`, // not UTF-8
      header(`a:${'x'.repeat(4096)}`),
    ];
    for (const value of malformed) expect(parseBasic(value), String(value).slice(0, 40)).toBeNull();
  });
});
