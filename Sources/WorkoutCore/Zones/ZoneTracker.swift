/// Seconds in each zone of one configuration over one stretch of a workout (the whole of it,
/// an activity, a lap): one number per zone, however long the stretch.
public struct ZoneTimes: Sendable, Hashable, Codable {
  public private(set) var seconds: [Double]

  public init(zoneCount: Int) {
    seconds = Array(repeating: 0, count: zoneCount)
  }

  public mutating func add(_ duration: Double, toZone zone: Int) {
    guard seconds.indices.contains(zone), duration > 0 else { return }
    seconds[zone] += duration
  }

  public var total: Double { seconds.reduce(0, +) }
}

/// The zone changed: HealthKit's zone-change event, with the current and previous zone (from
/// 0), the workout's running times in each zone, and the timer time of the sample that moved.
public struct ZoneChange: Sendable, Hashable, Codable {
  public var quantity: ZoneQuantity
  public var zone: Int
  public var previous: Int?
  public var times: ZoneTimes
  public var sampleTimer: Double
}

/// Time in zone for one zone configuration, kept as samples arrive: a sample's zone holds
/// until the next sample, or for at most `freshness` seconds (a strap that went quiet is not
/// a rider who stayed in one zone). Time is timer time, so pauses count in no zone. The
/// workout's, the current activity's and the current lap's times, in O(zones) memory.
public struct ZoneTracker: Sendable, Hashable, Codable {
  public let configuration: ZoneConfiguration
  public var freshness: Double
  /// A new zone is announced once samples have stayed in it this long (s): a heart rate
  /// wavering on a boundary is not a zone change every second. Time in zone is exact anyway.
  public var announceAfter: Double
  /// The zone last announced, and the one samples have moved to since (and from when).
  public private(set) var announced: Int?
  private var candidate: Int?
  private var candidateSince: Double?
  public private(set) var workout: ZoneTimes
  public private(set) var activity: ZoneTimes
  public private(set) var lap: ZoneTimes
  /// The zone of the last sample, and its timer time.
  public private(set) var zone: Int?
  public private(set) var sampleTimer: Double?
  /// Timer time up to which the last sample's zone has been counted.
  private var countedTo: Double?

  public init(configuration: ZoneConfiguration, freshness: Double = 5, announceAfter: Double = 0) {
    self.configuration = configuration
    self.freshness = freshness
    self.announceAfter = announceAfter
    workout = ZoneTimes(zoneCount: configuration.zones.count)
    activity = workout
    lap = workout
  }

  /// One sample (nil: none fresh at this point) at timer time `timer`. The time since the
  /// last sample goes to its zone; a change of zone is returned as the event to send.
  public mutating func sample(_ value: Double?, atTimer timer: Double) -> ZoneChange? {
    count(to: timer)
    guard let value, value.isFinite else {
      zone = nil
      sampleTimer = nil
      countedTo = nil
      return nil
    }
    let now = configuration.zoneIndex(of: value)
    zone = now
    sampleTimer = timer
    // The workout's first value (none announced yet) describes the second before it, its
    // point's, back to timer 0 where the workout began.
    countedTo = announced == nil ? max(0, timer - 1) : timer
    guard now != announced else {
      candidate = nil
      candidateSince = nil
      return nil
    }
    if candidate != now {
      candidate = now
      candidateSince = timer
    }
    // The first zone of the workout is news at once; a move, once it has held.
    guard announced == nil || timer - (candidateSince ?? timer) >= announceAfter else { return nil }
    let previous = announced
    announced = now
    candidate = nil
    candidateSince = nil
    return ZoneChange(
      quantity: configuration.quantity, zone: now, previous: previous, times: workout, sampleTimer: timer)
  }

  /// Counts the last sample's zone up to `timer` (at most `freshness` after the sample).
  public mutating func count(to timer: Double) {
    guard let zone, let sampleTimer, let from = countedTo else { return }
    let until = min(timer, sampleTimer + freshness)
    guard until > from else { return }
    let seconds = until - from
    workout.add(seconds, toZone: zone)
    activity.add(seconds, toZone: zone)
    lap.add(seconds, toZone: zone)
    countedTo = until
  }

  /// Ends the lap at timer time `timer`: its times, and a new lap from there.
  public mutating func closeLap(atTimer timer: Double) -> ZoneTimes {
    count(to: timer)
    defer { lap = ZoneTimes(zoneCount: configuration.zones.count) }
    return lap
  }

  /// Ends the activity (and its lap) at timer time `timer`: its times, and a new one from there.
  public mutating func closeActivity(atTimer timer: Double) -> ZoneTimes {
    count(to: timer)
    defer { activity = ZoneTimes(zoneCount: configuration.zones.count) }
    return activity
  }
}
