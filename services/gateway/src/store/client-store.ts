import { systemClock, type Clock } from '@rs/time';
import { documentSchema, upsertOne } from '@rs/store';
import { type Connection, type Model } from 'mongoose';

/** An API client (docs/api.md "Principals and authorization"): who calls, for which grantor, with admin rights or not. */
export interface ApiClient {
  clientId: string;
  grantorId: string;
  admin: boolean;
  secretHash: string;
  createdAt: Date;
  updatedAt: Date;
}

interface ClientDocument {
  _id: string;
  grantorId: string;
  admin: boolean;
  secretHash: string;
  createdAt: Date;
  updatedAt: Date;
}

const clientSchema = documentSchema<ClientDocument>('clients', {
  grantorId: 'string',
  admin: 'boolean',
  secretHash: 'string',
  createdAt: 'date',
  updatedAt: 'date',
});

const toClient = (doc: ClientDocument): ApiClient => ({
  clientId: doc._id,
  grantorId: doc.grantorId,
  admin: doc.admin,
  secretHash: doc.secretHash,
  createdAt: doc.createdAt,
  updatedAt: doc.updatedAt,
});

/** API clients in the gateway's own `identity` database. */
export class ClientStore {
  private readonly model: Model<ClientDocument>;

  constructor(
    db: Connection,
    private readonly clock: Clock = systemClock,
  ) {
    this.model = db.model<ClientDocument>('Client', clientSchema);
  }

  async find(clientId: string): Promise<ApiClient | null> {
    const doc = await this.model.findById(clientId).lean<ClientDocument>();
    return doc ? toClient(doc) : null;
  }

  async list(): Promise<ApiClient[]> {
    return (await this.model.find().sort({ _id: 1 }).lean<ClientDocument[]>()).map(toClient);
  }

  /** Creates or replaces the client; true when it was created. */
  async put(client: Pick<ApiClient, 'clientId' | 'grantorId' | 'admin' | 'secretHash'>): Promise<boolean> {
    const now = this.clock();
    const result = await upsertOne(this.model.collection, { _id: client.clientId } as never, {
      $set: { grantorId: client.grantorId, admin: client.admin, secretHash: client.secretHash, updatedAt: now },
      $setOnInsert: { createdAt: now },
    });
    return result.upsertedCount === 1;
  }

  async remove(clientId: string): Promise<boolean> {
    return (await this.model.deleteOne({ _id: clientId })).deletedCount === 1;
  }
}
