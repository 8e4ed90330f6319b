import type { Schemas } from '@rs/client';
import { useState } from 'preact/hooks';
import type { Api } from './api';
import { Problem, Table, useAttempt } from './components';

type HistoryEntry = Schemas['HistoryPage']['history'][number];
type Right = Schemas['Right'];
type Subscription = Schemas['Subscription'];

/** Histories read at once: a user with hundreds of rights does not open hundreds of requests. */
const AT_ONCE = 6;
/** Entries each resource's history gives the timeline, its newest. */
const PER_RESOURCE = 100;

interface TimelineEntry extends HistoryEntry {
  /** What the entry is about, as the user page names it. */
  about: string;
}

/**
 * One timeline of a user's history (docs/console.md "User"): every change of the rights and
 * subscriptions the page lists, merged newest first. It follows the lists: a user with
 * thousands of rights shows the history of the pages loaded, and more with each page.
 */
export function Timeline(props: { api: Api; connectId: string; rights: Right[]; subscriptions: Subscription[] }) {
  const { api, connectId } = props;
  const [entries, setEntries] = useState<TimelineEntry[] | null>(null);
  const { busy, error, attempt } = useAttempt();

  const load = () =>
    attempt(async () => {
      const sources = [
        ...props.rights.map((right) => ({
          about: `right ${right.sku}`,
          read: () =>
            api.read((client) =>
              client.GET('/id/users/{connectId}/rights/{rightId}/history', {
                params: { path: { connectId, rightId: right.rightId }, query: { limit: PER_RESOURCE } },
              }),
            ),
        })),
        ...props.subscriptions.map((sub) => ({
          about: `subscription ${sub.rightsSpec.map((template) => template.sku).join(', ')}`,
          read: () =>
            api.read((client) =>
              client.GET('/id/users/{connectId}/subs/{subscriptionId}/history', {
                params: { path: { connectId, subscriptionId: sub.subscriptionId }, query: { limit: PER_RESOURCE } },
              }),
            ),
        })),
      ];
      const merged: TimelineEntry[] = [];
      for (let at = 0; at < sources.length; at += AT_ONCE) {
        const pages = await Promise.all(sources.slice(at, at + AT_ONCE).map((source) => source.read()));
        pages.forEach((page, i) => {
          const about = sources[at + i]!.about;
          for (const entry of (page.data as { history: HistoryEntry[] }).history) merged.push({ ...entry, about });
        });
      }
      setEntries(merged.sort((a, b) => b.time.localeCompare(a.time)));
    });

  return (
    <div>
      <button type="button" class="secondary" onClick={() => void load()} disabled={busy}>
        {entries ? 'Read the history again' : 'Show the history of what is listed'}
      </button>
      <Problem error={error} />
      {entries && (
        <Table caption={`History of ${connectId}, newest first`} columns={['When', 'What', 'Change', 'By', 'Fields']}>
          {entries.map((entry) => (
            <tr key={`${entry.about} ${entry.generation} ${entry.type}`}>
              <td>{new Date(entry.time).toLocaleString()}</td>
              <td>{entry.about}</td>
              <td>{entry.type}</td>
              <td>
                {entry.actor.kind} {entry.actor.id}
              </td>
              <td class="subject">{Object.keys(entry.changes).join(', ')}</td>
            </tr>
          ))}
        </Table>
      )}
    </div>
  );
}
