/**
 * What the gateway tells the page about where it runs (docs/console.md): the API's base URL,
 * and the identity provider staff sign in at. It comes in a `<meta>` of the page, not a script,
 * so that the page's policy allows no inline script at all.
 */
export interface ConsoleConfig {
  /** The gateway's public base URL: the API, and the page's own origin. */
  apiBaseUrl: string;
  /** `CONSOLE_ISSUER`: the OpenID Provider staff sign in at; null when none is configured. */
  issuer: string | null;
  /** `CONSOLE_CLIENT_ID`: the console's public client there. */
  clientId: string;
  /** Where the provider sends the browser back: this page. */
  redirectUri: string;
}

export function readConfig(): ConsoleConfig {
  const meta = document.querySelector<HTMLMetaElement>('meta[name="rs-console"]');
  if (!meta) throw new Error('the page carries no console configuration');
  return JSON.parse(meta.content) as ConsoleConfig;
}
