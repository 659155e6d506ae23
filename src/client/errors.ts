import { errorByCode } from '../protocol/generated/errors.js';

/**
 * An error a tool can print as one line: what failed, in an operator's words, without a stack.
 * Everything the client library throws on purpose is a ClientError; anything else is a bug.
 */
export class ClientError extends Error {
  override readonly name = 'ClientError';
}

/** A Kafka error code from a response, kept with Kafka's name so tools can print it. */
export class KafkaResponseError extends ClientError {
  constructor(
    readonly code: number,
    readonly errorName: string,
    readonly retriable: boolean,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The error for a response code. `detail` is the broker's error message when it sent one; otherwise
 * Kafka's text for the code (the message its Java exceptions carry, which the tools print).
 */
export function kafkaError(code: number, detail?: string | null): KafkaResponseError {
  const info = errorByCode(code);
  const name = info?.name ?? `UNKNOWN_ERROR_${code}`;
  const text = detail ?? info?.message ?? `Unknown Kafka error code ${code}.`;
  return new KafkaResponseError(code, name, info?.retriable ?? false, text);
}

/** Throws the error for `code` unless it is NONE. */
export function checkCode(code: number, detail?: string | null): void {
  if (code !== 0) throw kafkaError(code, detail);
}

/** Short words for the socket errors an operator meets (the Node codes mean nothing to most). */
export function describeSocketError(e: unknown): string {
  const code = (e as { code?: string }).code;
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'unknown host';
    case 'ETIMEDOUT':
      return 'timed out';
    case 'ECONNRESET':
      return 'connection reset';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    default:
      return e instanceof Error ? e.message : String(e);
  }
}

/**
 * Kafka's Java exception classes whose names do not follow from the error's name (Errors.java);
 * every other one is the name in camel case, without _ERROR or _EXCEPTION, plus "Exception".
 */
const IRREGULAR_EXCEPTION_CLASSES: Readonly<Record<number, string>> = {
  2: 'CorruptRecordException',
  7: 'TimeoutException',
  10: 'RecordTooLargeException',
  11: 'ControllerMovedException',
  12: 'OffsetMetadataTooLarge',
  18: 'RecordBatchTooLargeException',
  29: 'TopicAuthorizationException',
  30: 'GroupAuthorizationException',
  31: 'ClusterAuthorizationException',
  36: 'TopicExistsException',
  40: 'InvalidConfigurationException',
  45: 'OutOfOrderSequenceException',
  46: 'DuplicateSequenceException',
  49: 'InvalidPidMappingException',
  50: 'InvalidTxnTimeoutException',
  53: 'TransactionalIdAuthorizationException',
  58: 'SaslAuthenticationException',
  61: 'DelegationTokenDisabledException',
  64: 'UnsupportedByAuthenticationException',
  65: 'DelegationTokenAuthorizationException',
  68: 'GroupNotEmptyException',
  97: 'PrincipalDeserializationException',
  128: 'InvalidRegularExpression',
};

/** The Java exception Kafka's clients raise for an error code, as its tools print it. */
export function kafkaExceptionClass(code: number): string {
  const irregular = IRREGULAR_EXCEPTION_CLASSES[code];
  if (irregular !== undefined) return `org.apache.kafka.common.errors.${irregular}`;
  const name = errorByCode(code)?.name ?? 'UNKNOWN_SERVER_ERROR';
  const camel = name
    .replace(/_(ERROR|EXCEPTION)$/, '')
    .split('_')
    .map((w) => w.charAt(0) + w.slice(1).toLowerCase())
    .join('');
  return `org.apache.kafka.common.errors.${camel}Exception`;
}
