import { useEffect, useState } from 'preact/hooks';

/** The console's pages, by the part of the address after `#` (one page for the gateway to serve). */
export type Route =
  | { page: 'find' }
  | { page: 'user'; connectId: string }
  | { page: 'audit'; subject?: string }
  | { page: 'webhooks' }
  | { page: 'catalog' }
  | { page: 'clients' }
  | { page: 'not-found' };

export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, '') || '/';
  const user = /^\/users\/([^/]+)$/.exec(path);
  if (user) return { page: 'user', connectId: decodeURIComponent(user[1]!) };
  const audit = /^\/audit(?:\?subject=(.+))?$/.exec(path);
  if (audit) return audit[1] ? { page: 'audit', subject: decodeURIComponent(audit[1]) } : { page: 'audit' };
  if (path === '/') return { page: 'find' };
  if (path === '/webhooks') return { page: 'webhooks' };
  if (path === '/catalog') return { page: 'catalog' };
  if (path === '/clients') return { page: 'clients' };
  return { page: 'not-found' };
}

export const hrefOf = {
  find: () => '#/',
  user: (connectId: string) => `#/users/${encodeURIComponent(connectId)}`,
  audit: (subject?: string) => (subject ? `#/audit?subject=${encodeURIComponent(subject)}` : '#/audit'),
  webhooks: () => '#/webhooks',
  catalog: () => '#/catalog',
  clients: () => '#/clients',
};

/** The current route, following the address as it changes. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const follow = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', follow);
    return () => removeEventListener('hashchange', follow);
  }, []);
  return route;
}
