import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Where a webhook may be sent (docs/api.md, server-side request forgery): `https` to public
 * addresses only, unless private targets are allowed (development, tests). Pure.
 */

/** IPv6's global unicast space (RFC 4291 2.4): outside it, no address is reached on the internet. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

/**
 * Whether an address is globally routable unicast, as ipaddr.js classifies the IANA special
 * purpose registries (loopback, private, link-local, shared, documentation, benchmarking,
 * multicast, reserved, and the IPv6 forms that carry an IPv4 address to somewhere else:
 * IPv4-translated, NAT64, 6to4, Teredo); an IPv4-mapped IPv6 address is its IPv4 address. An
 * IPv6 address must also lie in the global unicast space (which refuses, for one, the
 * deprecated IPv4-compatible `::a.b.c.d` form ipaddr.js calls unicast).
 */
export function isPublicAddress(address: string): boolean {
  if (isIP(address) === 0) return false;
  const parsed = ipaddr.process(address);
  if (parsed.range() !== 'unicast') return false;
  return parsed.kind() === 'ipv4' || parsed.match(GLOBAL_UNICAST_V6);
}

/** Whether `url` names its host by an address literal (no lookup) that is not public. */
export function isPrivateLiteral(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return isIP(host) !== 0 && !isPublicAddress(host);
}

/** The URL an endpoint may have, or why not (before its host is resolved). */
export function checkTargetUrl(
  raw: string,
  allowPrivate: boolean,
): { ok: true; url: URL } | { ok: false; reason: string } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'url: must be an absolute http(s) URL' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { ok: false, reason: 'url: must be http(s)' };
  if (url.protocol === 'http:' && !allowPrivate) return { ok: false, reason: 'url: must be https' };
  if (url.username || url.password) return { ok: false, reason: 'url: must not carry credentials' };
  if (raw.length > 2048) return { ok: false, reason: 'url: at most 2048 characters' };
  if (!allowPrivate && isPrivateLiteral(url)) return { ok: false, reason: 'url: must be a public address' };
  return { ok: true, url };
}
