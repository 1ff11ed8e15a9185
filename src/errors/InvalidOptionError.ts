/**
 * An option or argument given to the library is invalid. `option` names it; thrown
 * synchronously (or as a rejection of the call) before anything is sent.
 */
export class InvalidOptionError extends TypeError {
  override readonly name = "InvalidOptionError" as const;
  readonly code = "INVALID_OPTION" as const;
  /** The option at fault, such as `"timeoutMs"`. */
  readonly option: string;

  constructor(option: string, message: string) {
    super(message);
    this.option = option;
  }
}
