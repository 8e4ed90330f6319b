/** Credentials of an `Authorization: Basic` header (RFC 7617). */
export interface BasicCredentials {
  clientId: string;
  secret: string;
}

const MAX_HEADER_LENGTH = 4096;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Parses the header; null for anything that is not well-formed Basic credentials
 * (another scheme, bad base64, no colon, an empty part, not UTF-8, oversized).
 */
export function parseBasic(header: string | undefined): BasicCredentials | null {
  if (!header || header.length > MAX_HEADER_LENGTH) return null;
  const match = /^Basic +(\S+) *$/i.exec(header);
  if (!match || !BASE64.test(match[1]!) || match[1]!.length % 4 !== 0) return null;
  let decoded: string;
  try {
    decoded = utf8.decode(Buffer.from(match[1]!, 'base64'));
  } catch {
    return null;
  }
  const colon = decoded.indexOf(':');
  if (colon <= 0 || colon === decoded.length - 1) return null;
  if (hasControlCharacter(decoded)) return null;
  return { clientId: decoded.slice(0, colon), secret: decoded.slice(colon + 1) };
}

/** Control characters have no place in an identifier or a secret (read in place: every request passes here). */
function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}
