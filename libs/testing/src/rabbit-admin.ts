/** The few RabbitMQ management API calls the tests need. */
export interface BrokerQueue {
  name: string;
  type: string;
  durable: boolean;
  exclusive: boolean;
  auto_delete: boolean;
  arguments: Record<string, unknown>;
}

export class RabbitAdmin {
  private readonly base: string;
  private readonly authorization: string;

  constructor(managementUrl: string) {
    const url = new URL(managementUrl);
    this.authorization = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
    url.username = '';
    url.password = '';
    this.base = url.toString().replace(/\/$/, '');
  }

  private async call(method: string, path: string, body?: unknown): Promise<Response> {
    const response = await fetch(`${this.base}/api${path}`, {
      method,
      headers: { authorization: this.authorization, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok && response.status !== 404) {
      throw new Error(`RabbitMQ management ${method} ${path}: ${response.status} ${await response.text()}`);
    }
    return response;
  }

  async createVhost(vhost: string, user = 'guest'): Promise<void> {
    await this.call('PUT', `/vhosts/${encodeURIComponent(vhost)}`, {});
    await this.call('PUT', `/permissions/${encodeURIComponent(vhost)}/${encodeURIComponent(user)}`, {
      configure: '.*',
      write: '.*',
      read: '.*',
    });
  }

  /**
   * Deletes the vhosts of test systems that nothing is connected to: left by a run that was
   * killed before its files stopped. Each keeps quorum queues, and a broker holding hundreds
   * of them restarts and creates vhosts slowly (minutes, measured). A running file's vhost has
   * its services' connections, so it stays.
   */
  async deleteAbandonedTestVhosts(prefix = 't_'): Promise<string[]> {
    const vhosts = (await (await this.call('GET', '/vhosts')).json()) as Array<{ name: string }>;
    const abandoned: string[] = [];
    for (const { name } of vhosts.filter((vhost) => vhost.name.startsWith(prefix))) {
      if ((await this.connections(name)).length > 0) continue;
      await this.deleteVhost(name);
      abandoned.push(name);
    }
    return abandoned;
  }

  async deleteVhost(vhost: string): Promise<void> {
    await this.call('DELETE', `/vhosts/${encodeURIComponent(vhost)}`);
  }

  async connections(vhost: string): Promise<Array<{ name: string; client_properties?: { connection_name?: string } }>> {
    const response = await this.call('GET', `/vhosts/${encodeURIComponent(vhost)}/connections`);
    return response.status === 404 ? [] : ((await response.json()) as Array<{ name: string }>);
  }

  /** The queues of `vhost` as the broker describes them: type (classic, quorum), arguments, lifetime. */
  async queues(vhost: string): Promise<BrokerQueue[]> {
    const response = await this.call('GET', `/queues/${encodeURIComponent(vhost)}`);
    return response.status === 404 ? [] : ((await response.json()) as BrokerQueue[]);
  }

  /** Broker-side names of the open connections of `vhost` whose client named itself `connectionName`. */
  async connectionsNamed(vhost: string, connectionName: string): Promise<string[]> {
    return (await this.connections(vhost))
      .filter((connection) => connection.client_properties?.connection_name === connectionName)
      .map((connection) => connection.name);
  }

  /** Force-closes a connection, as a broker restart or a network failure would. */
  async closeConnection(name: string): Promise<void> {
    await this.call('DELETE', `/connections/${encodeURIComponent(name)}`);
  }

  /** Refuses new connections to `vhost` (null lifts the limit); open connections stay. */
  async limitConnections(vhost: string, max: number | null): Promise<void> {
    const path = `/vhost-limits/${encodeURIComponent(vhost)}/max-connections`;
    if (max === null) await this.call('DELETE', path);
    else await this.call('PUT', path, { value: max });
  }

  /** Drops every message of a queue, as if its events had been lost. */
  async purgeQueue(vhost: string, queue: string): Promise<void> {
    await this.call('DELETE', `/queues/${encodeURIComponent(vhost)}/${encodeURIComponent(queue)}/contents`);
  }

  async queueMessageCount(vhost: string, queue: string): Promise<number> {
    const response = await this.call('GET', `/queues/${encodeURIComponent(vhost)}/${encodeURIComponent(queue)}`);
    if (response.status === 404) return 0;
    return ((await response.json()) as { messages?: number }).messages ?? 0;
  }
}
