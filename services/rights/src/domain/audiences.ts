import type { RightEntity } from './right';

/**
 * Who may list a right (docs/api.md "Listing filters"), as the audiences it belongs to: every
 * admin; the callers of its grantor; those of a party that grants or provides it; those of its
 * provider among its grantor's rights. A list asks for exactly
 * one audience, the one holding what its caller may see before its other conditions, so the
 * store keeps one list per audience (docs/decisions/0049) and reads only what it returns.
 * An audience is a kind and the parties it is of.
 */
export type Audience = readonly [kind: string, ...parties: string[]];

const AUDIENCES = {
  all: ['all'],
  grantedBy: (grantorId: string) => ['g', grantorId],
  seenBy: (party: string) => ['v', party],
  providedBy: (grantorId: string, providerId: string) => ['s', grantorId, providerId],
} satisfies Record<string, Audience | ((...parties: string[]) => Audience)>;

/** Every audience of a right. */
export function audiencesOf(right: Pick<RightEntity, 'grantorId' | 'serviceProviderId'>): Audience[] {
  const provider = right.serviceProviderId;
  return [
    AUDIENCES.all,
    AUDIENCES.grantedBy(right.grantorId),
    AUDIENCES.seenBy(right.grantorId),
    ...(provider !== null && provider !== right.grantorId
      ? [AUDIENCES.seenBy(provider), AUDIENCES.providedBy(right.grantorId, provider)]
      : []),
  ];
}

/**
 * The audience a list reads: all rights (an admin's, `grantorOrProvider` null), those one party
 * grants or provides, those one grantor granted, or those one grantor granted that the caller
 * provides.
 */
export function audienceOfList({
  grantorId,
  grantorOrProvider,
}: {
  grantorId: string | null;
  grantorOrProvider: string | null;
}): Audience {
  if (grantorId === null) return grantorOrProvider === null ? AUDIENCES.all : AUDIENCES.seenBy(grantorOrProvider);
  if (grantorOrProvider === null || grantorOrProvider === grantorId) return AUDIENCES.grantedBy(grantorId);
  return AUDIENCES.providedBy(grantorId, grantorOrProvider);
}
