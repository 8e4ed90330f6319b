import type { Schemas } from '@rs/client';
import { useState } from 'preact/hooks';
import type { Api } from '../api';
import { ActionDialog, Problem, Section, Table, useLoad, type ActionField } from '../components';
import { PagedTable, pageQuery, usePaged } from '../paged';
import { Timeline } from '../timeline';
import { hrefOf } from '../route';
import type { StaffMember } from '../session';

type Right = Schemas['Right'];
type Subscription = Schemas['Subscription'];
type Entitlement = Schemas['Entitlement'];

/** An action under way: the dialog that asks for it. */
type Asking = {
  title: string;
  submitLabel: string;
  fields?: ActionField[];
  run: (values: Record<string, string>, headers: Record<string, string>) => Promise<unknown>;
};

/**
 * A user's whole situation (docs/console.md "User"): what they are entitled to now, their rights
 * and subscriptions as the member may see them, and every change the member's role allows,
 * each said why.
 */
export function UserPage(props: { api: Api; member: StaffMember; connectId: string }) {
  const { api, member, connectId } = props;
  const path = { connectId };
  const writes = member.role === 'write' || member.role === 'admin';
  // A member who is not an admin lists one grantor's at a time (docs/api.md "307").
  const [grantor, setGrantor] = useState<string | null>(member.role === 'admin' ? null : (member.grantors[0] ?? null));
  const [asking, setAsking] = useState<Asking | null>(null);
  const [done, setDone] = useState<string | null>(null);

  const user = useLoad(
    () => api.read((client) => client.GET('/id/users/{connectId}', { params: { path } })),
    [connectId],
  );
  const entitlements = useLoad(
    () => api.read((client) => client.GET('/id/users/{connectId}/entitlements', { params: { path } })),
    [connectId, done],
  );
  // A member who is not an admin lists one grantor's; the two lists name the filter differently.
  const rightsQuery = (cursor?: string) => ({ ...pageQuery(cursor), ...(grantor ? { grantorId: grantor } : {}) });
  const subsQuery = (cursor?: string) => ({ ...pageQuery(cursor), ...(grantor ? { grantorid: grantor } : {}) });
  const rights = usePaged<Right>(
    (cursor) =>
      api.read((client) =>
        client.GET('/id/users/{connectId}/rights', { params: { path, query: rightsQuery(cursor) } }),
      ),
    'right',
    [connectId, grantor, done],
  );
  const subscriptions = usePaged<Subscription>(
    (cursor) =>
      api.read((client) => client.GET('/id/users/{connectId}/subs', { params: { path, query: subsQuery(cursor) } })),
    'subscription',
    [connectId, grantor, done],
  );

  /** Asks for an action; once made, everything is read again. */
  const ask = (action: Asking) => setAsking(action);
  const rightPath = (right: Right) => ({ path: { connectId, rightId: right.rightId } });
  const subscriptionPath = (sub: Subscription) => ({ path: { connectId, subscriptionId: sub.subscriptionId } });
  /** Suspends or activates a right, asked for with a reason. */
  const lifecycle = (right: Right, command: 'suspend' | 'activate'): Asking => {
    const label = command === 'suspend' ? 'Suspend' : 'Activate';
    return {
      title: `${label} ${right.sku}`,
      submitLabel: label,
      run: (_values, headers) =>
        api.read((client) =>
          command === 'suspend'
            ? client.POST('/id/users/{connectId}/rights/{rightId}/suspend', { params: rightPath(right), headers })
            : client.POST('/id/users/{connectId}/rights/{rightId}/activate', { params: rightPath(right), headers }),
        ),
    };
  };

  /** Grants a right of a SKU for a while from now, metered or not. */
  const grantAsking = (): Asking => ({
    title: `Grant a right to ${connectId}`,
    submitLabel: 'Grant',
    fields: [
      { name: 'sku', label: 'SKU', required: true },
      ...(member.role === 'admin'
        ? [{ name: 'grantorId', label: 'Grantor', required: true }]
        : [
            {
              name: 'grantorId',
              label: 'Grantor',
              required: true,
              options: member.grantors,
              initial: grantor ?? '',
            },
          ]),
      { name: 'duration', label: 'For (ISO 8601 duration)', required: true, initial: 'P30D' },
      { name: 'quantity', label: 'Units (empty: not metered)', number: true },
    ],
    run: (values, headers) =>
      api.read((client) =>
        client.POST('/id/users/{connectId}/rights', {
          params: { path },
          headers,
          body: {
            sku: values.sku!,
            grantorId: values.grantorId!,
            state: 'ACTIVE',
            timeInterval: `${new Date().toISOString().replace(/\.\d{3}Z$/, 'Z')}/${values.duration}`,
            ...(values.quantity ? { quantity: Number(values.quantity) } : {}),
          },
        }),
      ),
  });
  /** Adds units to a metered right, or takes them away. */
  const adjustment = (right: Right): Asking => ({
    title: `Adjust the units of ${right.sku}`,
    submitLabel: 'Adjust',
    fields: [
      {
        name: 'amount',
        label: 'Units to add (negative: take away)',
        number: true,
        required: true,
      },
    ],
    run: (values, headers) =>
      api.read((client) =>
        client.POST('/id/users/{connectId}/rights/{rightId}/adjustments', {
          params: rightPath(right),
          headers,
          body: { amount: Number(values.amount) },
        }),
      ),
  });
  /** Changes a subscription's plan from now or from its next period. */
  const planChange = (sub: Subscription): Asking => ({
    title: 'Change the plan',
    submitLabel: 'Change',
    fields: [
      { name: 'sku', label: 'New plan (SKU)', required: true },
      { name: 'at', label: 'When', options: ['next-period', 'now'], initial: 'next-period' },
    ],
    run: (values, headers) =>
      api.read((client) =>
        client.POST('/id/users/{connectId}/subs/{subscriptionId}/change', {
          params: subscriptionPath(sub),
          headers,
          body: { rightsSpec: [{ sku: values.sku! }], at: values.at as 'now' | 'next-period' },
        }),
      ),
  });

  if (user.error) return <Problem error={user.error} />;
  return (
    <div>
      <h1>
        User <span class="id">{connectId}</span>
      </h1>
      <p>
        <a href={hrefOf.audit(`/id/users/${encodeURIComponent(connectId)}`)}>Changes made by staff to this user</a>
      </p>
      {member.role !== 'admin' && member.grantors.length > 1 && (
        <label class="inline">
          Grantor
          <select onChange={(event) => setGrantor((event.currentTarget as HTMLSelectElement).value)}>
            {member.grantors.map((one) => (
              <option key={one} value={one} selected={one === grantor}>
                {one}
              </option>
            ))}
          </select>
        </label>
      )}
      {done && (
        <p class="done" role="status">
          {done}
        </p>
      )}

      <Section title="Entitlements">
        <Problem error={entitlements.error} />
        {entitlements.value && (
          <EntitlementTable entitlements={(entitlements.value.data as { entitlements: Entitlement[] }).entitlements} />
        )}
      </Section>

      <Section
        title="Rights"
        actions={writes && <AskButton label="Grant a right" asking={grantAsking()} onAsk={ask} />}
      >
        <PagedTable
          list={rights}
          caption={`Rights of ${connectId}`}
          columns={['SKU', 'State', 'Interval', 'Units left', 'Grantor', 'Clock', ...(writes ? ['Actions'] : [])]}
          more="More rights"
          row={(right) => (
            <tr key={right.rightId} data-right={right.rightId}>
              <td>{right.sku}</td>
              <td>{right.state}</td>
              <td class="interval">{right.timeInterval}</td>
              <td>{right.quantity === null ? '—' : `${right.remaining} of ${right.quantity}`}</td>
              <td>{right.grantorId}</td>
              <td>{right.clockId ?? '—'}</td>
              {writes && (
                <td class="actions">
                  {right.state === 'ACTIVE' && (
                    <AskButton label="Suspend" asking={lifecycle(right, 'suspend')} onAsk={ask} />
                  )}
                  {(right.state === 'SUSPENDED' || right.state === 'CREATED') && (
                    <AskButton label="Activate" asking={lifecycle(right, 'activate')} onAsk={ask} />
                  )}
                  {right.quantity !== null && right.state !== 'EXPIRED' && (
                    <AskButton label="Adjust" asking={adjustment(right)} onAsk={ask} />
                  )}
                </td>
              )}
            </tr>
          )}
        />
      </Section>

      <Section title="Subscriptions">
        <PagedTable
          list={subscriptions}
          caption={`Subscriptions of ${connectId}`}
          columns={['Plan', 'State', 'Periods', 'Pending change', 'Grantor', 'Clock', ...(writes ? ['Actions'] : [])]}
          more="More subscriptions"
          row={(sub) => (
            <tr key={sub.subscriptionId} data-subscription={sub.subscriptionId}>
              <td>{sub.rightsSpec.map((template) => template.sku).join(', ')}</td>
              <td>{sub.state}</td>
              <td class="interval">{sub.origTimeSpec}</td>
              <td>
                {sub.pendingChange ? sub.pendingChange.rightsSpec.map((template) => template.sku).join(', ') : '—'}
              </td>
              <td>{sub.grantorId}</td>
              <td>{sub.clockId ?? '—'}</td>
              {writes && (
                <td class="actions">
                  <AskButton label="Change plan" asking={planChange(sub)} onAsk={ask} />
                </td>
              )}
            </tr>
          )}
        />
      </Section>

      <Section title="Timeline">
        <Timeline api={api} connectId={connectId} rights={rights.items} subscriptions={subscriptions.items} />
      </Section>

      {asking && (
        <ActionDialog
          title={asking.title}
          submitLabel={asking.submitLabel}
          fields={asking.fields}
          onClose={() => setAsking(null)}
          onSubmit={async (values, reason) => {
            await asking.run(values, api.headersFor(reason));
            setDone(`${asking.submitLabel}: done (${new Date().toLocaleTimeString()})`);
          }}
        />
      )}
    </div>
  );
}

function EntitlementTable({ entitlements }: { entitlements: Entitlement[] }) {
  if (entitlements.length === 0) return <p>No active right.</p>;
  return (
    <Table caption="Entitlements per SKU" columns={['SKU', 'Entitled', 'Until', 'Balance', 'In grace']}>
      {entitlements.map((entitlement) => (
        <tr key={entitlement.sku} data-sku={entitlement.sku}>
          <td>{entitlement.sku}</td>
          <td>{entitlement.entitled ? 'yes' : 'no'}</td>
          <td>{entitlement.until ?? '—'}</td>
          <td class="balance">{entitlement.balance ?? '—'}</td>
          <td>{entitlement.rights.some((right) => right.inGrace) ? 'yes' : 'no'}</td>
        </tr>
      ))}
    </Table>
  );
}

/** A button that opens the dialog of an action (which asks its reason and fields). */
function AskButton(props: { label: string; asking: Asking; onAsk: (asking: Asking) => void }) {
  return (
    <button type="button" onClick={() => props.onAsk(props.asking)}>
      {props.label}
    </button>
  );
}
