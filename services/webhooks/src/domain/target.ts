import { BlockList, isIP } from 'node:net';

/**
 * Where a webhook may be sent (DESIGN.md 8, server-side request forgery): `https` to public
 * addresses only, unless private targets are allowed (development, tests). Pure.
 */

/** Addresses that are not the public internet: loopback, private, link-local, CGNAT, multicast, reserved. */
// Two lists: node's BlockList matches an IPv4 address against IPv6 rules as IPv4-mapped.
const NOT_PUBLIC_V4 = new BlockList();
const NOT_PUBLIC_V6 = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  NOT_PUBLIC_V4.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  NOT_PUBLIC_V6.addSubnet(network, prefix, 'ipv6');

export function isPublicAddress(address: string): boolean {
  const mapped = ipv4Mapped(address);
  if (mapped) return isPublicAddress(mapped);
  const family = isIP(address);
  if (family === 0) return false;
  return family === 4 ? !NOT_PUBLIC_V4.check(address, 'ipv4') : !NOT_PUBLIC_V6.check(address, 'ipv6');
}

/** The IPv4 address inside an IPv4-mapped IPv6 one (`::ffff:127.0.0.1` or `::ffff:7f00:1`), else null. */
function ipv4Mapped(address: string): string | null {
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (dotted) return dotted;
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return null;
  const high = parseInt(hex[1]!, 16);
  const low = parseInt(hex[2]!, 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
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
