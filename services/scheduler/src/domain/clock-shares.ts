/**
 * How grantors share the clock lane (docs/decisions/0065): a scheduler replica keeps at most
 * `total` items on test clocks commanded and not yet done, and each grantor with such items in
 * hand an equal part of them. A grantor over its part (it had the lane alone until another came)
 * commands nothing more until it is back under. Returns how many more items `grantorId` may
 * command now. Pure.
 */
export function roomOf(total: number, inHand: ReadonlyMap<string, number>, grantorId: string): number {
  let sharing = 1;
  for (const [other, count] of inHand) if (other !== grantorId && count > 0) sharing += 1;
  const part = Math.max(1, Math.floor(total / sharing));
  return Math.max(0, part - (inHand.get(grantorId) ?? 0));
}
