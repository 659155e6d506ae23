/**
 * max.connections across all of a broker's listeners, as Kafka counts it (one broker-wide limit):
 * a socket takes a slot as it is accepted, before any TLS handshake, and gives it back when it
 * closes. Shared by the broker's socket servers; a lone socket server has its own.
 */
export class ConnectionSlots {
  private taken = 0;

  constructor(readonly max: number) {}

  tryTake(): boolean {
    if (this.taken >= this.max) return false;
    this.taken++;
    return true;
  }

  give(): void {
    this.taken--;
  }

  get inUse(): number {
    return this.taken;
  }
}
