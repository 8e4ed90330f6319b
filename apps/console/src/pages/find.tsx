import { useState } from 'preact/hooks';
import { Refused, type Api } from '../api';
import { Problem, useAttempt } from '../components';
import { hrefOf } from '../route';

/** What an id named: a user, or a right or subscription of one (its user's page shows it). */
interface Found {
  kind: 'user' | 'right' | 'subscription';
  connectId: string;
  label: string;
}

/**
 * Find a user by any id a caller might quote (docs/console.md "Find"): their connectId, or the id
 * of one of their rights or subscriptions (docs/api.md "Find by id"). One field: the id is looked
 * for as each, and what the member may see is offered; a single match opens its user's page.
 */
export function FindPage(props: { api: Api }) {
  const [found, setFound] = useState<{ id: string; matches: Found[] } | null>(null);
  const { busy: searching, error, attempt } = useAttempt();

  const submit = async (event: Event) => {
    event.preventDefault();
    const id = String(new FormData(event.currentTarget as HTMLFormElement).get('id') ?? '').trim();
    if (!id) return;
    await attempt(async () => {
      const matches = await findAll(props.api, id);
      if (matches.length === 1) location.hash = hrefOf.user(matches[0]!.connectId);
      else setFound({ id, matches });
    });
  };

  return (
    <div>
      <h1>Find a user</h1>
      <form class="find" onSubmit={submit} role="search">
        <label>
          connectId, right id or subscription id
          <input name="id" required autoComplete="off" spellcheck={false} />
        </label>
        <button type="submit" disabled={searching}>
          Find
        </button>
      </form>
      <Problem error={error} />
      {found?.matches.length === 0 && <p role="status">Nothing you may see has the id {found.id}.</p>}
      {found && found.matches.length > 1 && (
        <ul aria-label="Found">
          {found.matches.map((match) => (
            <li key={match.kind}>
              <a href={hrefOf.user(match.connectId)}>{match.label}</a>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/**
 * The id as a user, a right and a subscription, asked at once. A refusal (not found, not a valid
 * id of that kind) is no match; anything else (the API unreachable) is an error.
 */
async function findAll(api: Api, id: string): Promise<Found[]> {
  const lookups: Array<Promise<Found | null>> = [
    notFoundIsNull(async () => {
      const { data } = await api.read((client) =>
        client.GET('/id/users/{connectId}', { params: { path: { connectId: id } } }),
      );
      return { kind: 'user', connectId: data.connectId, label: `User ${data.connectId}` };
    }),
    notFoundIsNull(async () => {
      const { data } = await api.read((client) =>
        client.GET('/id/rights/{rightId}', { params: { path: { rightId: id } } }),
      );
      return { kind: 'right', connectId: data.userId, label: `Right ${data.rightId} (${data.sku}) of ${data.userId}` };
    }),
    notFoundIsNull(async () => {
      const { data } = await api.read((client) =>
        client.GET('/id/subs/{subscriptionId}', { params: { path: { subscriptionId: id } } }),
      );
      return {
        kind: 'subscription',
        connectId: data.userId,
        label: `Subscription ${data.subscriptionId} of ${data.userId}`,
      };
    }),
  ];
  return (await Promise.all(lookups)).filter((match): match is Found => match !== null);
}

async function notFoundIsNull(lookup: () => Promise<Found>): Promise<Found | null> {
  try {
    return await lookup();
  } catch (error) {
    if (error instanceof Refused && (error.status === 404 || error.status === 400)) return null;
    throw error;
  }
}
