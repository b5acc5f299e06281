import { promises as dns } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/**
 * Where webhook deliveries may go (SPEC §9.1): http(s) with a host, no user-info, at most 2,048
 * characters, and — unless WEBHOOK_ALLOW_PRIVATE=true — only public addresses, so that a
 * subscription cannot make the deliverer reach the admin listener, Redis, a cloud metadata
 * endpoint or anything else behind the service. Checked at subscription (a 422) and again on the
 * address each delivery actually dials (src/notifications/deliver.ts), since a name may resolve
 * elsewhere later.
 */

export const MAX_URL_LENGTH = 2048;

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Every address a host name resolves to (tests inject their own). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = (hostname) => dns.lookup(hostname, { all: true, verbatim: true });

export interface DestinationPolicy {
  /** WEBHOOK_ALLOW_PRIVATE: non-public addresses allowed too. */
  allowPrivate: boolean;
  resolve: Resolver;
}

/** A destination the policy refuses: the delivery fails for good (retrying cannot help). */
export class DestinationRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DestinationRefused';
  }
}

// IANA special-purpose IPv4 ranges: none of them is a receiver on the internet.
const NON_PUBLIC_V4: [string, number][] = [
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8], // RFC 1918
  ['100.64.0.0', 10], // CGNAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12], // RFC 1918
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relays
  ['192.168.0.0', 16], // RFC 1918
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
];

// IPv6: only global unicast (2000::/3) is public, less its special blocks. Everything else —
// ::, ::1, IPv4-compatible, NAT64, fc00::/7, fe80::/10, ff00::/8 — is refused by not being in it.
const NON_PUBLIC_V6_GLOBAL: [string, number][] = [
  ['2001::', 23], // IETF protocol assignments (Teredo, benchmarking, ORCHID)
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4: reaches an embedded IPv4 address
  ['3fff::', 20], // documentation
];

const blockList = (ranges: [string, number][], type: 'ipv4' | 'ipv6') => {
  const list = new BlockList();
  for (const [net, prefix] of ranges) list.addSubnet(net, prefix, type);
  return list;
};

/** Whether an IP address is one a public receiver can have; anything not an address is not. */
export function isPublicAddress(address: string): boolean {
  // The lists are built per call (a few microseconds, once per delivery's address) rather than
  // held by the module: BlockList is a mutable object, and src/ keeps no module-level state.
  const family = isIP(address);
  const nonPublicV4 = blockList(NON_PUBLIC_V4, 'ipv4');
  if (family === 4) return !nonPublicV4.check(address, 'ipv4');
  if (family !== 6) return false;
  // ::ffff:a.b.c.d dials a.b.c.d: the IPv4 list decides (BlockList maps it onto its IPv4 rules).
  if (blockList([['::ffff:0:0', 96]], 'ipv6').check(address, 'ipv6')) return !nonPublicV4.check(address, 'ipv6');
  return blockList([['2000::', 3]], 'ipv6').check(address, 'ipv6') && !blockList(NON_PUBLIC_V6_GLOBAL, 'ipv6').check(address, 'ipv6');
}

/** The host as an address or name, without the brackets of an IPv6 literal. */
export const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1');

/** What may be shown of a URL in logs and failure reasons: scheme, host and port only. */
export const originOf = (url: URL) => `${url.protocol}//${url.host}`;

/** The URL without its password (subscriptions made before user-info was refused may hold one). */
export function withoutPassword(text: string): string {
  try {
    const url = new URL(text);
    if (url.password === '') return text;
    url.password = '';
    return url.href;
  } catch {
    return text;
  }
}

/** Why a URL's form is refused (scheme, host, user-info, length), or undefined. */
export function formProblem(text: string): string | undefined {
  if (text.length > MAX_URL_LENGTH) return `at most ${MAX_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'must be an http or https URL';
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') return 'must be an http or https URL';
  if (url.username !== '' || url.password !== '') return 'must not carry user-info (user:pass@)';
  return undefined;
}

/** Refuses what is not public (unless allowed); the addresses a name resolved to are returned to dial. */
export function checkAddresses(host: string, addresses: ResolvedAddress[], policy: Pick<DestinationPolicy, 'allowPrivate'>): void {
  if (policy.allowPrivate) return;
  const blocked = addresses.find((a) => !isPublicAddress(a.address));
  if (blocked === undefined) return;
  const via = blocked.address === host ? '' : ` (resolves to ${blocked.address})`;
  throw new DestinationRefused(`${host}${via} is not a public address; WEBHOOK_ALLOW_PRIVATE=true allows it`);
}

/** RFC 6761: `localhost` and its subdomains are loopback whatever a resolver answers. */
const isLocalhostName = (host: string) => /(^|\.)localhost\.?$/i.test(host);

const RESOLVE_TIMEOUT_MS = 5000;

/**
 * Why a subscription's URL is refused (SPEC §9.1), or undefined. A name that does not resolve
 * now (or not within 5 s) is accepted: it reaches nothing yet, and every delivery checks what it
 * resolves to then.
 */
export async function destinationProblem(text: string, policy: DestinationPolicy): Promise<string | undefined> {
  const form = formProblem(text);
  if (form !== undefined || policy.allowPrivate) return form;
  const host = hostOf(new URL(text));
  try {
    if (isIP(host) !== 0) checkAddresses(host, [{ address: host, family: isIP(host) }], policy);
    else if (isLocalhostName(host)) checkAddresses(host, [{ address: '127.0.0.1', family: 4 }], policy);
    else checkAddresses(host, await resolveWithin(policy.resolve, host, RESOLVE_TIMEOUT_MS), policy);
  } catch (err) {
    if (err instanceof DestinationRefused) return `the host ${err.message}`;
  }
  return undefined;
}

async function resolveWithin(resolve: Resolver, host: string, timeoutMs: number): Promise<ResolvedAddress[]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<ResolvedAddress[]>((resolveEmpty) => {
    timer = setTimeout(() => resolveEmpty([]), timeoutMs);
  });
  try {
    return await Promise.race([resolve(host), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
