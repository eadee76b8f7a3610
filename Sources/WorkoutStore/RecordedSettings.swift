import WorkoutCore

/// What a session recorded of the rider's settings when it started, read back from its events:
/// the figures of `show`, the phone's ride page and every exported file are reckoned from these,
/// whatever the configuration says now.
public struct RecordedSettings: Sendable, Hashable {
  /// Its `zoneConfiguration` events, those this binary can read.
  public var zones: [ZoneConfiguration]
  /// Its `ftp` event, W.
  public var ftp: Double?
  /// Its `rider` event.
  public var rider: RiderProfile?
  /// Its `powerAveraging` event; a session from before that setting averaged with the zeros.
  public var powerAveraging: PowerAveraging

  public init(events: [EventRecord]) {
    func kind(_ kind: SessionEvent.Kind) -> [EventRecord] { events.filter { $0.kind == kind.rawValue } }
    zones = kind(.zoneConfiguration).compactMap { $0.detail.flatMap(SessionAnalysis.configuration(fromEvent:)) }
    ftp = kind(.ftp).first?.value
    rider = kind(.rider).last?.detail.map(RiderProfile.init(eventDetail:))
    powerAveraging = kind(.powerAveraging).last?.detail.flatMap(PowerAveraging.init(rawValue:)) ?? .withZeros
  }
}
