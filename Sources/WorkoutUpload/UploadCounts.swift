/// The upload queue at a glance, as `workoutctl status` and the phone page show it.
public struct UploadCounts: Sendable, Hashable, Codable {
  /// Jobs the uploader still has work in: queued, sending, waiting.
  public var pending: Int
  /// Jobs given up on; each stays so until asked for again (`workoutctl upload --again`).
  public var failed: Int
  /// The failed job changed last: its `reason` says why.
  public var lastFailure: UploadJob?

  public init(pending: Int, failed: Int, lastFailure: UploadJob? = nil) {
    self.pending = pending
    self.failed = failed
    self.lastFailure = lastFailure
  }

  /// Whether there is anything to show.
  public var isEmpty: Bool { pending == 0 && failed == 0 }
}
