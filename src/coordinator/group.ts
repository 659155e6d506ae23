/**
 * The in-memory model of one classic consumer group: members, the generation, the selected
 * protocol and the committed offsets. It holds state and answers questions about it; the timing,
 * persistence and request handling live in the coordinator, which owns every ClassicGroup and is
 * the only code that mutates one (single-threaded, so no locks as in Kafka's GroupMetadata).
 */
import { ErrorCode } from '../protocol/generated/errors.js';
import type { JoinGroupResponseMember } from '../protocol/generated/JoinGroupResponse.js';
import type { ConsumerGroup } from './consumer/consumer-group.js';
import { CONSUMER_PROTOCOL_TYPE, subscribedTopics } from './consumer-protocol.js';
import type { GroupMetadataValue, OffsetAndMetadata } from './records.js';

export type GroupState = 'Empty' | 'PreparingRebalance' | 'CompletingRebalance' | 'Stable' | 'Dead';

/** Kafka's allowed previous states for each state (GroupMetadata's validPreviousStates). */
const VALID_PREVIOUS: Record<GroupState, readonly GroupState[]> = {
  Empty: ['PreparingRebalance'],
  PreparingRebalance: ['Stable', 'CompletingRebalance', 'Empty'],
  CompletingRebalance: ['PreparingRebalance'],
  Stable: ['CompletingRebalance'],
  Dead: ['Stable', 'PreparingRebalance', 'CompletingRebalance', 'Empty', 'Dead'],
};

export interface Protocol {
  name: string;
  metadata: Buffer;
}

export interface JoinResult {
  errorCode: number;
  memberId: string;
  generationId: number;
  /** null when there is none (an error, or an empty group). */
  protocolName: string | null;
  leaderId: string;
  /** Only the leader gets the members (with their metadata for the selected protocol). */
  members: JoinGroupResponseMember[];
  skipAssignment: boolean;
}

export interface SyncResult {
  errorCode: number;
  assignment: Buffer;
}

const EMPTY = Buffer.alloc(0);

export class MemberMetadata {
  assignment: Buffer = EMPTY;
  /** The parked JoinGroup of this member, answered when the join phase completes. */
  awaitingJoin: ((r: JoinResult) => void) | null = null;
  /** The parked SyncGroup of this member, answered when the leader's assignment is stored. */
  awaitingSync: ((r: SyncResult) => void) | null = null;
  /** True from the first join until the first generation that includes the member. */
  isNew = false;
  /** The member is removed if no heartbeat (or join/sync) arrives by this time. */
  heartbeatDeadlineMs = 0;
  /** Cancels the one timer that watches heartbeatDeadlineMs. */
  cancelHeartbeatTimer: (() => void) | null = null;

  constructor(
    public memberId: string,
    readonly groupInstanceId: string | null,
    public clientId: string,
    public clientHost: string,
    public rebalanceTimeoutMs: number,
    public sessionTimeoutMs: number,
    readonly protocolType: string,
    public protocols: Protocol[],
  ) {}

  get isStatic(): boolean {
    return this.groupInstanceId !== null;
  }

  metadataFor(protocol: string): Buffer {
    const p = this.protocols.find((x) => x.name === protocol);
    if (p === undefined) throw new Error(`member ${this.memberId} does not support protocol ${protocol}`);
    return p.metadata;
  }

  /** Same protocols, same order, same metadata: a rejoin that changes nothing. */
  matches(protocols: readonly Protocol[]): boolean {
    if (protocols.length !== this.protocols.length) return false;
    return protocols.every(
      (p, i) => p.name === this.protocols[i]!.name && p.metadata.equals(this.protocols[i]!.metadata),
    );
  }

  /** The member's most preferred protocol among the candidates. */
  vote(candidates: ReadonlySet<string>): string {
    const p = this.protocols.find((x) => candidates.has(x.name));
    if (p === undefined) throw new Error(`member ${this.memberId} supports none of the candidate protocols`);
    return p.name;
  }
}

export class ClassicGroup {
  /**
   * Set while the group runs KIP-848's consumer protocol: its members, epochs and assignments
   * live there, and the classic fields stay those of an Empty group. This entry keeps holding
   * the committed offsets of either kind.
   */
  consumer: ConsumerGroup | null = null;
  state: GroupState;
  generationId = 0;
  protocolType: string | null = null;
  protocolName: string | null = null;
  leaderId: string | null = null;
  currentStateTimestampMs: number;
  /** Insertion order matters: the first member becomes leader, and the next one when it leaves. */
  readonly members = new Map<string, MemberMetadata>();
  /** Member ids handed out with MEMBER_ID_REQUIRED, each with the cancel of its expiry timer. */
  readonly pendingMembers = new Map<string, () => void>();
  /** group.instance.id → member id. */
  readonly staticMembers = new Map<string, string>();
  /** Members of the current generation that have not sent SyncGroup yet. */
  readonly pendingSyncMembers = new Set<string>();
  numMembersAwaitingJoin = 0;
  /** Set when a member joins during the initial rebalance delay, which then extends the delay. */
  newMemberAdded = false;
  /** True while the join phase of an empty group waits out group.initial.rebalance.delay.ms. */
  inInitialDelay = false;
  /** topic → partition → committed offset. */
  readonly offsets = new Map<string, Map<number, OffsetAndMetadata>>();
  /**
   * The base offset in __consumer_offsets of the batch that wrote each committed offset, by
   * offsetKey: a transaction's offsets, committed by its marker, replace only older ones (Kafka's
   * CommitRecordMetadataAndOffset.olderThan), in memory as on replay.
   */
  readonly offsetAppendedAt = new Map<string, bigint>();
  /**
   * Offsets of open transactions, by producer id, then offsetKey (Kafka's
   * pendingTransactionalOffsetCommits): written to the log, applied by the COMMIT marker of the
   * producer's transaction, dropped by its ABORT marker. appendedOffset is null until the
   * batch's append completes.
   */
  readonly pendingTxnOffsets = new Map<bigint, Map<string, PendingTxnOffset>>();
  /**
   * Commits written but not yet acknowledged, by "topic\0partition" (a count: several may be in
   * flight). Deleting the group tombstones these too, or a replay would resurrect them.
   */
  readonly pendingOffsetCommits = new Map<string, number>();
  /** Topics subscribed in the current generation; undefined when not known (not a consumer group). */
  subscribedTopics: Set<string> | undefined = undefined;
  cancelJoinTimer: (() => void) | null = null;
  cancelSyncTimer: (() => void) | null = null;

  constructor(
    readonly groupId: string,
    /** The __consumer_offsets partition that holds this group. */
    readonly partition: number,
    state: GroupState,
    nowMs: number,
  ) {
    this.state = state;
    this.currentStateTimestampMs = nowMs;
  }

  is(state: GroupState): boolean {
    return this.state === state;
  }

  transitionTo(state: GroupState, nowMs: number): void {
    if (!VALID_PREVIOUS[state].includes(this.state)) {
      throw new Error(`group ${this.groupId}: illegal transition ${this.state} -> ${state}`);
    }
    this.state = state;
    this.currentStateTimestampMs = nowMs;
  }

  get size(): number {
    return this.members.size;
  }

  has(memberId: string): boolean {
    return this.members.has(memberId);
  }

  isLeader(memberId: string): boolean {
    return this.leaderId === memberId;
  }

  isPendingMember(memberId: string): boolean {
    return this.pendingMembers.has(memberId);
  }

  staticMemberId(groupInstanceId: string | null): string | undefined {
    return groupInstanceId === null ? undefined : this.staticMembers.get(groupInstanceId);
  }

  /** A request naming a group.instance.id whose current holder is another member id is from a fenced zombie. */
  isStaticMemberFenced(memberId: string, groupInstanceId: string | null): boolean {
    const current = this.staticMemberId(groupInstanceId);
    return current !== undefined && current !== memberId;
  }

  /** The largest rebalance timeout of any member: how long the join phase may wait. */
  get rebalanceTimeoutMs(): number {
    let max = 0;
    for (const m of this.members.values()) max = Math.max(max, m.rebalanceTimeoutMs);
    return max;
  }

  get isConsumerGroup(): boolean {
    return this.protocolType === CONSUMER_PROTOCOL_TYPE;
  }

  add(member: MemberMetadata, onJoin: ((r: JoinResult) => void) | null): void {
    if (this.members.size === 0) this.protocolType = member.protocolType;
    if (this.leaderId === null) this.leaderId = member.memberId;
    this.members.set(member.memberId, member);
    if (member.groupInstanceId !== null) this.staticMembers.set(member.groupInstanceId, member.memberId);
    this.setAwaitingJoin(member, onJoin);
  }

  remove(memberId: string): MemberMetadata | undefined {
    const member = this.members.get(memberId);
    if (member === undefined) return undefined;
    this.members.delete(memberId);
    if (member.awaitingJoin !== null) this.numMembersAwaitingJoin--;
    if (member.groupInstanceId !== null && this.staticMembers.get(member.groupInstanceId) === memberId) {
      this.staticMembers.delete(member.groupInstanceId);
    }
    this.pendingSyncMembers.delete(memberId);
    if (this.leaderId === memberId) {
      const next = this.members.keys().next();
      this.leaderId = next.done ? null : next.value;
    }
    return member;
  }

  /** Parks (or clears) a member's JoinGroup, keeping the count of members that have rejoined. */
  setAwaitingJoin(member: MemberMetadata, onJoin: ((r: JoinResult) => void) | null): void {
    if (member.awaitingJoin === null && onJoin !== null) this.numMembersAwaitingJoin++;
    else if (member.awaitingJoin !== null && onJoin === null) this.numMembersAwaitingJoin--;
    member.awaitingJoin = onJoin;
  }

  /** Gives a static member's place (and leadership) to a new member id; the old id is forgotten. */
  replaceStaticMember(oldMemberId: string, newMemberId: string): MemberMetadata {
    const member = this.members.get(oldMemberId);
    if (member === undefined || member.groupInstanceId === null) {
      throw new Error(`group ${this.groupId}: no static member ${oldMemberId} to replace`);
    }
    // The old id's parked requests are answered as fenced: a client still using it is a zombie.
    member.awaitingJoin?.(joinError(oldMemberId, ErrorCode.FENCED_INSTANCE_ID));
    member.awaitingSync?.({ errorCode: ErrorCode.FENCED_INSTANCE_ID, assignment: EMPTY });
    if (member.awaitingJoin !== null) this.numMembersAwaitingJoin--;
    member.awaitingJoin = null;
    member.awaitingSync = null;
    const wasPendingSync = this.pendingSyncMembers.delete(oldMemberId);
    this.members.delete(oldMemberId);
    member.memberId = newMemberId;
    this.members.set(newMemberId, member);
    this.staticMembers.set(member.groupInstanceId, newMemberId);
    if (wasPendingSync) this.pendingSyncMembers.add(newMemberId);
    if (this.leaderId === oldMemberId) this.leaderId = newMemberId;
    return member;
  }

  /**
   * Whether a member with these protocols may join: an empty group takes any non-empty set;
   * otherwise the protocol type must match and at least one protocol must be one every member supports.
   */
  supportsProtocols(protocolType: string, protocols: readonly Protocol[]): boolean {
    if (this.is('Empty')) return protocolType.length > 0 && protocols.length > 0;
    if (this.protocolType !== protocolType) return false;
    const candidates = this.candidateProtocols();
    return protocols.some((p) => candidates.has(p.name));
  }

  /** Protocols every member supports, in the order of the first member's preference. */
  candidateProtocols(): Set<string> {
    let candidates: Set<string> | null = null;
    for (const m of this.members.values()) {
      const names = m.protocols.map((p) => p.name);
      candidates = candidates === null ? new Set(names) : new Set(names.filter((n) => candidates!.has(n)));
    }
    return candidates ?? new Set();
  }

  /** Kafka's vote: each member picks its favourite candidate; most votes wins (first candidate on a tie). */
  selectProtocol(): string {
    const candidates = this.candidateProtocols();
    if (candidates.size === 0) throw new Error(`group ${this.groupId} has no protocol all members support`);
    const votes = new Map<string, number>();
    for (const m of this.members.values()) {
      const choice = m.vote(candidates);
      votes.set(choice, (votes.get(choice) ?? 0) + 1);
    }
    let best = '';
    let bestVotes = -1;
    for (const name of candidates) {
      const n = votes.get(name) ?? 0;
      if (n > bestVotes) {
        best = name;
        bestVotes = n;
      }
    }
    return best;
  }

  hasAllMembersJoined(): boolean {
    return this.members.size === this.numMembersAwaitingJoin && this.pendingMembers.size === 0;
  }

  notYetRejoinedMembers(): MemberMetadata[] {
    return [...this.members.values()].filter((m) => m.awaitingJoin === null);
  }

  /**
   * A leader that did not rejoin (a static member may stay without rejoining) hands leadership to
   * a member that did. False when no member rejoined at all.
   */
  maybeElectNewJoinedLeader(): boolean {
    if (this.leaderId === null) return false;
    const leader = this.members.get(this.leaderId);
    if (leader !== undefined && leader.awaitingJoin !== null) return true;
    for (const m of this.members.values()) {
      if (m.awaitingJoin !== null) {
        this.leaderId = m.memberId;
        return true;
      }
    }
    return false;
  }

  initNextGeneration(nowMs: number): void {
    this.generationId++;
    if (this.members.size > 0) {
      this.protocolName = this.selectProtocol();
      this.transitionTo('CompletingRebalance', nowMs);
    } else {
      this.protocolName = null;
      this.transitionTo('Empty', nowMs);
    }
    this.subscribedTopics = this.computeSubscribedTopics();
    this.pendingSyncMembers.clear();
  }

  /** For a consumer group, the union of the members' subscriptions; undefined if any is unreadable. */
  computeSubscribedTopics(): Set<string> | undefined {
    if (!this.isConsumerGroup || this.protocolName === null) return undefined;
    const topics = new Set<string>();
    for (const m of this.members.values()) {
      const t = subscribedTopics(m.metadataFor(this.protocolName));
      if (t === undefined) return undefined;
      for (const x of t) topics.add(x);
    }
    return topics;
  }

  /** A topic counts as subscribed when the subscriptions cannot be read: deleting its offsets would be unsafe. */
  /** No members of either protocol: Kafka's EMPTY of a classic or a consumer group. */
  isEmptyGroup(): boolean {
    return this.consumer !== null ? this.consumer.members.size === 0 : this.is('Empty');
  }

  isSubscribedToTopic(topic: string): boolean {
    if (this.consumer !== null) return this.consumer.isSubscribedToTopic(topic);
    return this.subscribedTopics === undefined || this.subscribedTopics.has(topic);
  }

  currentMemberMetadata(): JoinGroupResponseMember[] {
    const protocol = this.protocolName;
    if (protocol === null) throw new Error(`group ${this.groupId} has no selected protocol`);
    return [...this.members.values()].map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      metadata: m.metadataFor(protocol),
    }));
  }

  /** The GroupMetadataValue for the current generation, with the given assignment per member id. */
  toRecordValue(assignment: ReadonlyMap<string, Buffer>): GroupMetadataValue {
    const protocol = this.protocolName;
    return {
      protocolType: this.protocolType ?? '',
      generation: this.generationId,
      protocol,
      leader: this.leaderId,
      currentStateTimestamp: BigInt(this.currentStateTimestampMs),
      members: [...this.members.values()].map((m) => ({
        memberId: m.memberId,
        groupInstanceId: m.groupInstanceId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        rebalanceTimeout: m.rebalanceTimeoutMs,
        sessionTimeout: m.sessionTimeoutMs,
        subscription: protocol === null ? EMPTY : m.metadataFor(protocol),
        assignment: assignment.get(m.memberId) ?? EMPTY,
      })),
    };
  }

  offsetCount(): number {
    let n = 0;
    for (const parts of this.offsets.values()) n += parts.size;
    return n;
  }

  getOffset(topic: string, partition: number): OffsetAndMetadata | undefined {
    return this.offsets.get(topic)?.get(partition);
  }

  /** Sets a committed offset; `appendedOffset` is the base offset of the batch that wrote it. */
  setOffset(topic: string, partition: number, o: OffsetAndMetadata, appendedOffset: bigint): void {
    let parts = this.offsets.get(topic);
    if (parts === undefined) {
      parts = new Map();
      this.offsets.set(topic, parts);
    }
    parts.set(partition, o);
    this.offsetAppendedAt.set(offsetKey(topic, partition), appendedOffset);
  }

  /** Removes a committed offset, and any open transaction's offset for the partition (Kafka's removeOffsets). */
  removeOffset(topic: string, partition: number): boolean {
    const key = offsetKey(topic, partition);
    for (const [producerId, pending] of this.pendingTxnOffsets) {
      pending.delete(key);
      if (pending.size === 0) this.pendingTxnOffsets.delete(producerId);
    }
    this.offsetAppendedAt.delete(key);
    const parts = this.offsets.get(topic);
    if (parts === undefined) return false;
    const removed = parts.delete(partition);
    if (parts.size === 0) this.offsets.delete(topic);
    return removed;
  }

  /** Whether a commit to this partition is in flight or in an open transaction (OffsetFetch's requireStable). */
  hasPendingOffsetCommit(topic: string, partition: number): boolean {
    const key = offsetKey(topic, partition);
    if (this.pendingOffsetCommits.has(key)) return true;
    for (const pending of this.pendingTxnOffsets.values()) if (pending.has(key)) return true;
    return false;
  }

  /**
   * The marker of `producerId`'s transaction is written (Kafka's completePendingTxnOffsetCommit):
   * COMMIT makes its offsets the committed ones, unless a later batch committed the partition
   * again; ABORT drops them. Offsets whose append has not completed are dropped either way:
   * their TxnOffsetCommit has not been acknowledged, so the producer could not have ended its
   * transaction over them. Returns how many offsets were applied.
   */
  completePendingTxnOffsets(producerId: bigint, commit: boolean): number {
    const pending = this.pendingTxnOffsets.get(producerId);
    if (pending === undefined) return 0;
    this.pendingTxnOffsets.delete(producerId);
    if (!commit) return 0;
    let applied = 0;
    for (const [key, p] of pending) {
      if (p.appendedOffset === null) continue;
      const current = this.offsetAppendedAt.get(key);
      if (current !== undefined && current >= p.appendedOffset) continue;
      this.setOffset(p.topic, p.partition, p.value, p.appendedOffset);
      applied++;
    }
    return applied;
  }

  /** Nothing committed, pending or in an open transaction: an Empty group like this may go. */
  hasNoOffsets(): boolean {
    return (
      this.offsets.size === 0 && this.pendingOffsetCommits.size === 0 && this.pendingTxnOffsets.size === 0
    );
  }
}

/** An offset written by an open transaction (Kafka's CommitRecordMetadataAndOffset of a pending one). */
export interface PendingTxnOffset {
  readonly topic: string;
  readonly partition: number;
  readonly value: OffsetAndMetadata;
  /** The base offset of its batch in __consumer_offsets; null while the append is in flight. */
  appendedOffset: bigint | null;
}

/** Key of a topic partition in per-group maps; NUL cannot occur in a topic name. */
export function offsetKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

export function joinError(memberId: string, errorCode: number): JoinResult {
  return {
    errorCode,
    memberId,
    generationId: -1,
    protocolName: null,
    leaderId: '',
    members: [],
    skipAssignment: false,
  };
}
