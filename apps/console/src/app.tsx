import { useState } from 'preact/hooks';
import type { Api } from './api';
import type { ConsoleConfig } from './config';
import { AuditPage } from './pages/audit';
import { CatalogPage } from './pages/catalog';
import { ClientsPage } from './pages/clients';
import { WebhooksPage } from './pages/webhooks';
import { FindPage } from './pages/find';
import { UserPage } from './pages/user';
import { hrefOf, useRoute } from './route';
import { signInProblem, type Session } from './session';

/** The console (docs/console.md): sign-in, then the page the address names. */
export function App(props: { config: ConsoleConfig; session: Session; api: Api; signInError: unknown }) {
  const { config, session, api } = props;
  const [, setSignedOut] = useState(0);
  const route = useRoute();
  const member = session.member;

  if (!member)
    return (
      <main id="main" class="sign-in">
        <h1>Rights console</h1>
        <p>Support staff and operators sign in with their organisation's identity provider.</p>
        {props.signInError ? (
          <p class="problem" role="alert">
            {signInProblem(props.signInError)}
          </p>
        ) : null}
        <button type="button" onClick={() => void session.signIn()} disabled={!config.issuer}>
          Sign in
        </button>
        {!config.issuer && <p>No identity provider is configured for the console (CONSOLE_ISSUER).</p>}
      </main>
    );
  return (
    <>
      <header>
        <a class="skip" href="#main">
          Skip to the page
        </a>
        <nav aria-label="Console">
          <a href={hrefOf.find()} aria-current={route.page === 'find' || route.page === 'user' ? 'page' : undefined}>
            Find
          </a>
          <a href={hrefOf.audit()} aria-current={route.page === 'audit' ? 'page' : undefined}>
            Audit log
          </a>
          <a href={hrefOf.webhooks()} aria-current={route.page === 'webhooks' ? 'page' : undefined}>
            Webhooks
          </a>
          {member.role === 'admin' && (
            <>
              <a href={hrefOf.catalog()} aria-current={route.page === 'catalog' ? 'page' : undefined}>
                Catalog
              </a>
              <a href={hrefOf.clients()} aria-current={route.page === 'clients' ? 'page' : undefined}>
                API clients
              </a>
            </>
          )}
        </nav>
        <p class="member">
          <span>{member.name}</span> <span class="role">{member.role ?? 'no staff role'}</span>
          {member.grantors.length > 0 && <span class="grantors"> · {member.grantors.join(', ')}</span>}
          <button
            type="button"
            class="secondary"
            onClick={() => {
              session.signOut();
              setSignedOut((n) => n + 1);
            }}
          >
            Sign out
          </button>
        </p>
      </header>
      <main id="main" tabIndex={-1}>
        {route.page === 'find' && <FindPage api={api} />}
        {route.page === 'user' && (
          <UserPage key={route.connectId} api={api} member={member} connectId={route.connectId} />
        )}
        {route.page === 'audit' && (
          <AuditPage key={route.subject ?? ''} api={api} member={member} subject={route.subject} />
        )}
        {route.page === 'webhooks' && <WebhooksPage api={api} member={member} />}
        {route.page === 'catalog' && <CatalogPage api={api} />}
        {route.page === 'clients' && <ClientsPage api={api} />}
        {route.page === 'not-found' && <p>There is no such page of the console.</p>}
      </main>
    </>
  );
}
