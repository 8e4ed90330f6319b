import type { Schemas } from '@rs/client';
import { useState } from 'preact/hooks';
import type { Api } from '../api';
import { Problem, Table, useLoad } from '../components';
import type { StaffMember } from '../session';

type Entry = Schemas['AuditPage']['entries'][number];
type Filters = { actor?: string; subject?: string; grantorId?: string; after?: string; before?: string };

/** The audit log (docs/audit.md), newest first, filtered by actor, subject, grantor and time. */
export function AuditPage(props: { api: Api; member: StaffMember; subject?: string }) {
  const { api, member } = props;
  const [filters, setFilters] = useState<Filters>(() => ({
    ...(props.subject ? { subject: props.subject } : {}),
    ...(member.role !== 'admin' && member.grantors.length > 1 ? { grantorId: member.grantors[0] } : {}),
  }));
  const [older, setOlder] = useState<{ entries: Entry[]; next: string | undefined } | null>(null);
  const read = (cursor?: string) =>
    api.read((client) =>
      client.GET('/admin/audit', { params: { query: { ...filters, limit: 50, ...(cursor ? { cursor } : {}) } } }),
    );
  const page = useLoad(async () => {
    setOlder(null);
    return read();
  }, [JSON.stringify(filters)]);
  const entries = [
    ...((page.value?.data as { entries: Entry[] } | undefined)?.entries ?? []),
    ...(older?.entries ?? []),
  ];
  const next = older ? older.next : page.value?.next;

  const submit = (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const chosen: Filters = {};
    for (const key of ['actor', 'subject', 'grantorId', 'after', 'before'] as const) {
      const value = String(form.get(key) ?? '').trim();
      if (value) chosen[key] = key === 'after' || key === 'before' ? new Date(value).toISOString() : value;
    }
    setFilters(chosen);
  };
  return (
    <div>
      <h1>Audit log</h1>
      <form class="filters" onSubmit={submit} aria-label="Filters">
        <label>
          Actor
          <input name="actor" value={filters.actor} />
        </label>
        <label>
          Subject (a path or link)
          <input name="subject" value={filters.subject} />
        </label>
        <label>
          Grantor
          <input name="grantorId" value={filters.grantorId} />
        </label>
        <label>
          From
          <input name="after" type="datetime-local" />
        </label>
        <label>
          Until
          <input name="before" type="datetime-local" />
        </label>
        <button type="submit">Filter</button>
      </form>
      <Problem error={page.error} />
      <Table caption="Audit entries, newest first" columns={['When', 'Who', 'What', 'Subject', 'Why', 'Answer']}>
        {entries.map((entry) => (
          <tr key={entry.auditId} data-audit={entry.auditId}>
            <td>{new Date(entry.at).toLocaleString()}</td>
            <td>{entry.actor.name ?? entry.actor.id}</td>
            <td>{entry.action}</td>
            <td class="subject">{new URL(entry.subject).pathname}</td>
            <td class="reason">{entry.reason ?? '—'}</td>
            <td>{entry.status ?? 'none (the gateway stopped)'}</td>
          </tr>
        ))}
      </Table>
      {entries.length === 0 && !page.loading && <p>No entry.</p>}
      {next && (
        <button
          type="button"
          class="secondary"
          onClick={async () => {
            const more = await read(next);
            setOlder({
              entries: [...(older?.entries ?? []), ...(more.data as { entries: Entry[] }).entries],
              next: more.next,
            });
          }}
        >
          Older entries
        </button>
      )}
    </div>
  );
}
