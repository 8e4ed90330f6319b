import { mongo } from 'mongoose';
import { describe, expect, it } from 'vitest';
import { isTransient } from '../src/index';

// What says the database is unavailable (a retry later may succeed: 503 to a client, the whole
// batch retried by the broker) and what says something about the operation itself.
const named = (name: string, extra: object = {}) => Object.assign(new Error('x'), { name, ...extra });

describe('isTransient', () => {
  it('when the driver, mongoose or the socket says the server is unreachable, restarting or gone, then it is transient', () => {
    for (const error of [
      named('MongoNetworkError'),
      named('MongoServerSelectionError'),
      named('MongooseServerSelectionError'),
      named('MongoServerError', { code: 91 }), // shutting down
      named('MongoServerError', { code: 11600 }), // interrupted at shutdown
      named('MongooseError', { message: 'Operation `rights.insertOne()` buffering timed out after 10000ms' }),
      Object.assign(new Error('This socket has been ended by the other party'), { code: 'EPIPE' }),
      Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
      // An insertMany cut by the network: the driver's bulk error wraps it and names no document.
      new mongo.MongoBulkWriteError(new mongo.MongoNetworkError('read ECONNRESET'), {} as never),
    ])
      expect(isTransient(error), `${error.name} ${error.message}`).toBe(true);
  });

  it('when the server refuses the operation itself, or the code has a bug, then it is not', () => {
    for (const error of [
      named('MongoServerError', { code: 11000 }), // duplicate key
      named('MongoServerError', { code: 2 }), // bad value
      // A bulk write that the server refused for one document: that document's own failure.
      new mongo.MongoBulkWriteError(
        { message: 'invalid key', writeErrors: [{ index: 1, code: 2 }] } as never,
        {} as never,
      ),
      named('MongooseError', { message: 'Cast to ObjectId failed' }),
      new TypeError('cannot read properties of undefined'),
      null,
    ])
      expect(isTransient(error)).toBe(false);
  });
});
