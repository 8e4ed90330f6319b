import { BlockList, isIP } from 'node:net';

/**
 * Who is at the other end of a request (docs/api.md "No lock-out"): the socket's peer, or,
 * when that peer is a trusted proxy (`TRUSTED_PROXIES`: an ingress, a load balancer), the
 * nearest address in `X-Forwarded-For` that is not one. Proxies append the address they
 * received from, so the list is read from its end; whatever lies before the first untrusted
 * address was written by the client and is not believed. Pure.
 */
export class TrustedProxies {
  private readonly list = new BlockList();
  readonly empty: boolean;

  /** `spec`: comma-separated addresses or CIDRs (IPv4 or IPv6). Throws on anything else. */
  constructor(spec: string | undefined) {
    const entries = (spec ?? '')
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean);
    for (const entry of entries) {
      const [address, bits, extra] = entry.split('/');
      const family = isIP(address ?? '');
      if (family === 0 || extra !== undefined) throw new Error(`${entry} is not an address or a CIDR`);
      const type = family === 4 ? 'ipv4' : 'ipv6';
      if (bits === undefined) {
        this.list.addAddress(address!, type);
        continue;
      }
      const prefix = Number(bits);
      if (!/^\d{1,3}$/.test(bits) || prefix > (family === 4 ? 32 : 128))
        throw new Error(`${entry} has an invalid prefix length`);
      this.list.addSubnet(address!, prefix, type);
    }
    this.empty = entries.length === 0;
  }

  has(address: string): boolean {
    const plain = unmapped(address);
    const family = isIP(plain);
    return family !== 0 && this.list.check(plain, family === 4 ? 'ipv4' : 'ipv6');
  }

  /** The request's source address, from its socket peer and its `X-Forwarded-For` header. */
  sourceOf(peer: string, forwardedFor: string | undefined): string {
    let source = unmapped(peer);
    if (this.empty || !forwardedFor || !this.has(source)) return source;
    const hops = forwardedFor
      .split(',')
      .map((hop) => unmapped(hop.trim()))
      .reverse();
    for (const hop of hops) {
      if (isIP(hop) === 0) return source; // garbage: the last address we could believe stands
      source = hop;
      if (!this.has(hop)) return hop;
    }
    return source;
  }
}

/** `::ffff:10.0.0.1` is 10.0.0.1. */
const unmapped = (address: string) => address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
