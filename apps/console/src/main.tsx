import { render } from 'preact';
import { Api } from './api';
import { App } from './app';
import { readConfig } from './config';
import { Session } from './session';
import './styles.css';

// The console starts here: a sign-in the provider sent the browser back from is completed
// first, then the page is drawn.
const config = readConfig();
const session = new Session(config);
const api = new Api(config.apiBaseUrl, session);
let signInError: unknown = null;
try {
  // Who signed in is the gateway's word, not the page's reading of the token.
  if (await session.completeSignIn(new URL(location.href))) session.signedInAs(await api.me());
} catch (error) {
  signInError = error;
}
render(
  <App session={session} api={api} signInError={signInError} config={config} />,
  document.getElementById('console')!,
);
