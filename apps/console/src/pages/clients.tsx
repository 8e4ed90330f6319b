import type { Schemas } from '@rs/client';
import type { Api } from '../api';
import { Problem, Table, useLoad } from '../components';

type ApiClient = Schemas['ClientView'];

/** The API clients (admins): who calls the platform, for which grantor, never their secrets. */
export function ClientsPage({ api }: { api: Api }) {
  const clients = useLoad(() => api.read((client) => client.GET('/admin/clients')), []);
  const list = (clients.value?.data as { clients: ApiClient[] } | undefined)?.clients ?? [];
  return (
    <div>
      <h1>API clients</h1>
      <Problem error={clients.error} />
      <Table caption="API clients" columns={['Client', 'Grantor', 'Admin', 'Since', 'Changed']}>
        {list.map((one) => (
          <tr key={one.clientId} data-client={one.clientId}>
            <td class="id">{one.clientId}</td>
            <td>{one.grantorId}</td>
            <td>{one.admin ? 'yes' : 'no'}</td>
            <td>{new Date(one.createdAt).toLocaleString()}</td>
            <td>{new Date(one.updatedAt).toLocaleString()}</td>
          </tr>
        ))}
      </Table>
    </div>
  );
}
