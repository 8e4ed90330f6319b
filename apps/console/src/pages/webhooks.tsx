import type { Schemas } from '@rs/client';
import { useState } from 'preact/hooks';
import type { Api } from '../api';
import { ActionDialog, Problem, Section, Table, useLoad } from '../components';
import { PagedTable, pageQuery, usePaged } from '../paged';
import type { StaffMember } from '../session';

type Endpoint = Schemas['WebhookEndpoint'];
type Delivery = Schemas['WebhookDeliveryList']['deliveries'][number];

/** Webhook endpoints (docs/webhooks.md) and their deliveries; a failed one may be sent again. */
export function WebhooksPage({ api, member }: { api: Api; member: StaffMember }) {
  const endpoints = useLoad(() => api.read((client) => client.GET('/webhooks/endpoints')), []);
  const [open, setOpen] = useState<string | null>(null);
  const list = (endpoints.value?.data as { endpoints: Endpoint[] } | undefined)?.endpoints ?? [];
  return (
    <div>
      <h1>Webhooks</h1>
      <Problem error={endpoints.error} />
      <Table caption="Webhook endpoints" columns={['Endpoint', 'Events', 'Test clocks', 'Deliveries']}>
        {list.map((endpoint) => (
          <tr key={endpoint.endpointId} data-endpoint={endpoint.endpointId}>
            <td class="subject">{endpoint.url}</td>
            <td>{endpoint.events.join(', ')}</td>
            <td>{endpoint.clocks ? 'yes' : 'no'}</td>
            <td>
              <button type="button" class="secondary" onClick={() => setOpen(endpoint.endpointId)}>
                Deliveries
              </button>
            </td>
          </tr>
        ))}
      </Table>
      {list.length === 0 && !endpoints.loading && <p>No endpoint.</p>}
      {open && <Deliveries key={open} api={api} member={member} endpointId={open} />}
    </div>
  );
}

function Deliveries(props: { api: Api; member: StaffMember; endpointId: string }) {
  const { api, endpointId } = props;
  const writes = props.member.role === 'write' || props.member.role === 'admin';
  const [retrying, setRetrying] = useState<Delivery | null>(null);
  const [round, setRound] = useState(0);
  const path = { endpointId };
  const deliveries = usePaged<Delivery>(
    (cursor) =>
      api.read((client) =>
        client.GET('/webhooks/endpoints/{endpointId}/deliveries', { params: { path, query: pageQuery(cursor) } }),
      ),
    'deliveries',
    [endpointId, round],
  );
  return (
    <Section title="Deliveries">
      <PagedTable
        list={deliveries}
        caption="Deliveries, newest first"
        columns={['Event', 'Status', 'Attempts', 'Last answer', 'Next attempt', ...(writes ? ['Actions'] : [])]}
        more="More deliveries"
        row={(delivery) => (
          <tr key={delivery.deliveryId} data-delivery={delivery.deliveryId}>
            <td>{delivery.type}</td>
            <td>{delivery.status}</td>
            <td>{delivery.attempts}</td>
            <td>{delivery.lastStatus ?? '—'}</td>
            <td>{delivery.nextAttemptAt ? new Date(delivery.nextAttemptAt).toLocaleString() : '—'}</td>
            {writes && (
              <td>
                {delivery.status === 'failed' && (
                  <button type="button" onClick={() => setRetrying(delivery)}>
                    Retry
                  </button>
                )}
              </td>
            )}
          </tr>
        )}
      />
      {retrying && (
        <ActionDialog
          title={`Send ${retrying.type} again`}
          submitLabel="Retry"
          onClose={() => setRetrying(null)}
          onSubmit={async (_values, reason) => {
            await api.read((client) =>
              client.POST('/webhooks/endpoints/{endpointId}/deliveries/{deliveryId}/retry', {
                params: { path: { endpointId, deliveryId: retrying.deliveryId } },
                headers: api.headersFor(reason),
              }),
            );
            setRound((n) => n + 1);
          }}
        />
      )}
    </Section>
  );
}
