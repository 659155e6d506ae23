/** Which limit refused a socket. */
export type SlotLimit = 'max.connections' | 'max.connections.per.ip';

/** What tryTake answers: a slot, or the limit that refused it and whether that began a refusal episode. */
export type SlotAnswer =
  | { readonly taken: true }
  | { readonly taken: false; readonly limit: SlotLimit; readonly first: boolean };

/** A refusal episode that ended when a slot was given back: which limit, for which address, how many refused. */
export interface EndedRefusals {
  readonly limit: SlotLimit;
  readonly address: string;
  readonly refused: number;
}

/** Addresses whose refusal episodes are remembered at once (beyond, each refusal is logged). */
const MAX_EPISODE_ADDRESSES = 4096;

/**
 * max.connections across all of a broker's listeners, as Kafka counts it (one broker-wide limit),
 * and max.connections.per.ip for each client address: a socket takes a slot as it is accepted,
 * before any TLS handshake, and gives it back when it closes. Both limits are read at each accept
 * (they are dynamic broker configs). Shared by the broker's socket servers; a lone socket server
 * has its own.
 *
 * Refusals come in episodes, for the listeners to log by state change rather than one line per
 * refused socket (a client retrying in a loop against a full broker would write a line each
 * millisecond): an episode of a limit begins with the first socket it refuses and ends when a slot
 * it guards is given back (any slot for max.connections, one of the address's for the per-address
 * limit), so the next attempt can be admitted. Episodes are kept only for addresses that hold
 * slots (a per-address limit of 0 aside: at most MAX_EPISODE_ADDRESSES).
 */
export class ConnectionSlots {
  private taken = 0;
  private readonly byAddress = new Map<string, number>();
  private readonly maxOf: () => number;
  /** Sockets refused by max.connections in the current episode (0: none running). */
  private refusedAtMax = 0;
  /** Per address: sockets refused by max.connections.per.ip in its current episode. */
  private readonly refusedPerAddress = new Map<string, number>();

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
  tryTake(address: string): SlotAnswer {
    if (this.taken >= this.maxOf())
      return { taken: false, limit: 'max.connections', first: this.refusedAtMax++ === 0 };
    const fromAddress = this.byAddress.get(address) ?? 0;
    if (fromAddress >= this.maxPerAddress()) {
      const refused = this.refusedPerAddress.get(address) ?? 0;
      // An address that holds no slot (a limit of 0) never gives one back to end its episode.
      if (refused > 0 || this.refusedPerAddress.size < MAX_EPISODE_ADDRESSES)
        this.refusedPerAddress.set(address, refused + 1);
      return { taken: false, limit: 'max.connections.per.ip', first: refused === 0 };
    }
    this.taken++;
    this.byAddress.set(address, fromAddress + 1);
    return { taken: true };
  }

  /** Gives back a slot of `address`; answers the refusal episodes this ends. */
  give(address: string): EndedRefusals[] {
    this.taken--;
    const n = (this.byAddress.get(address) ?? 1) - 1;
    if (n <= 0) this.byAddress.delete(address);
    else this.byAddress.set(address, n);
    const ended: EndedRefusals[] = [];
    if (this.refusedAtMax > 0) {
      ended.push({ limit: 'max.connections', address, refused: this.refusedAtMax });
      this.refusedAtMax = 0;
    }
    const refused = this.refusedPerAddress.get(address);
    if (refused !== undefined) {
      ended.push({ limit: 'max.connections.per.ip', address, refused });
      this.refusedPerAddress.delete(address);
    }
    return ended;
  }

  get inUse(): number {
    return this.taken;
  }

  /** The limit on connections from one address (max.connections.per.ip). */
  get maxPerIp(): number {
    return this.maxPerAddress();
  }
}
