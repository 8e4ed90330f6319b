import { render } from 'preact';
import { App } from './app';
import { readConfig } from './config';
import { Session } from './session';
import './styles.css';

// The console starts here: a sign-in the provider sent the browser back from is completed
// first, then the page is drawn.
const config = readConfig();
const session = new Session(config);
let signInError: unknown = null;
try {
  await session.completeSignIn(new URL(location.href));
} catch (error) {
  signInError = error;
}
render(<App config={config} session={session} signInError={signInError} />, document.getElementById('console')!);
