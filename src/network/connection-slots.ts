/**
 * max.connections across all of a broker's listeners, as Kafka counts it (one broker-wide limit),
 * and max.connections.per.ip for each client address: a socket takes a slot as it is accepted,
 * before any TLS handshake, and gives it back when it closes. Both limits are read at each accept
 * (they are dynamic broker configs). Shared by the broker's socket servers; a lone socket server
 * has its own.
 */
export class ConnectionSlots {
  private taken = 0;
  private readonly byAddress = new Map<string, number>();
  private readonly maxOf: () => number;

  constructor(
    max: number | (() => number),
    private readonly maxPerAddress: () => number = () => Number.POSITIVE_INFINITY,
  ) {
    this.maxOf = typeof max === 'number' ? () => max : max;
  }

  get max(): number {
    return this.maxOf();
  }

  /** Takes a slot for a socket from `address`; otherwise which limit refused it. */
  tryTake(address: string): 'taken' | 'max.connections' | 'max.connections.per.ip' {
    if (this.taken >= this.maxOf()) return 'max.connections';
    const fromAddress = this.byAddress.get(address) ?? 0;
    if (fromAddress >= this.maxPerAddress()) return 'max.connections.per.ip';
    this.taken++;
    this.byAddress.set(address, fromAddress + 1);
    return 'taken';
  }

  give(address: string): void {
    this.taken--;
    const n = (this.byAddress.get(address) ?? 1) - 1;
    if (n <= 0) this.byAddress.delete(address);
    else this.byAddress.set(address, n);
  }

  get inUse(): number {
    return this.taken;
  }

  /** The limit on connections from one address (max.connections.per.ip). */
  get maxPerIp(): number {
    return this.maxPerAddress();
  }
}
