import WorkoutCore
import WorkoutStore

/// A GPX 1.1 track of one stored session, made as its points stream by (see `ActivityEncoder`).
/// One `trk`, one `trkseg` per running stretch of the timer: a resume after a pause starts a
/// new segment. A point recorded while the timer is stopped stays in the segment of the
/// stretch the pause ends, so a pause never makes a segment of its own. GPX requires a
/// position: points without one are left out (and not counted). Heart rate, cadence and
/// temperature go in Garmin's TrackPointExtension v1 under the prefix `gpxtpx` (the one
/// GPSBabel reads), power in Garmin's PowerExtension v1.
public struct GPXActivityWriter: ActivityEncoder {
  static let namespace = "http://www.topografix.com/GPX/1/1"
  static let trackPointExtension = "http://www.garmin.com/xmlschemas/TrackPointExtension/v1"
  /// GPX 1.1's `extensionsType` takes elements of other namespaces only (`##other`): a bare
  /// `<power>` (Strava's) is in the GPX namespace and fails the XSD, so power goes in
  /// Garmin's own namespace for it, as Garmin's GPX files write it.
  static let powerExtension = "http://www.garmin.com/xmlschemas/PowerExtension/v1"

  private let exported: ExportedSession
  private var stretches: RunningStretches
  /// The stretch whose `trkseg` is open, if one is.
  private var openSegment: Int?
  private var trackPoints = 0

  public init(_ session: ExportedSession) {
    exported = session
    stretches = RunningStretches(session.timerEvents)
  }

  /// The track's `type`: a fixed word per known activity, never the stored text itself.
  static func trackType(_ activity: String) -> String {
    switch ActivityType(rawValue: activity) {
    case .cycling: "cycling"
    case .indoorCycling: "indoor_cycling"
    case .running: "running"
    case .walking: "walking"
    case .hiking: "hiking"
    case .other, nil: "other"
    }
  }

  /// The declaration, `gpx` with its namespaces, `metadata` and the track's name and type.
  public mutating func begin() -> [UInt8] {
    let session = exported.session
    let schemaLocation = [
      Self.namespace, "http://www.topografix.com/GPX/1/1/gpx.xsd",
      Self.trackPointExtension, "http://www.garmin.com/xmlschemas/TrackPointExtensionv1.xsd",
      Self.powerExtension, "http://www.garmin.com/xmlschemas/PowerExtensionv1.xsd",
    ].joined(separator: " ")
    let text = """
      <?xml version="1.0" encoding="UTF-8"?>
      <gpx version="1.1" creator="workoutd" xmlns="\(Self.namespace)" \
      xmlns:gpxtpx="\(Self.trackPointExtension)" xmlns:pwr="\(Self.powerExtension)" \
      xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="\(schemaLocation)">
       <metadata>
        <time>\(XMLText.time(exported.start))</time>
       </metadata>
       <trk>
        <name>\(XMLText.escaped("workoutd session \(session.id) (\(session.activity))"))</name>
      \(exported.annotationText.map { "  <desc>\(XMLText.escaped($0))</desc>\n" } ?? "")  <type>\(Self.trackType(session.activity))</type>

      """
    return Array(text.utf8)
  }

  /// One `trkpt`, opening a new `trkseg` first when the point starts a running stretch.
  public mutating func point(_ exportPoint: ExportPoint) -> [UInt8] {
    let point = exportPoint.point
    let stretch = stretches.stretch(at: point.wall)
    guard let lat = point.lat.flatMap({ XMLText.decimal($0, places: 7) }),
      let lon = point.lon.flatMap({ XMLText.decimal($0, places: 7) })
    else { return [] }
    var text = ""
    if openSegment != stretch {
      if openSegment != nil { text += "  </trkseg>\n" }
      text += "  <trkseg>\n"
      openSegment = stretch
    }
    // GPX 1.1 XSD, wptType: ele, time, …, extensions.
    text += "   <trkpt lat=\"\(lat)\" lon=\"\(lon)\">\n"
    if let altitude = point.altBaro ?? (point.fixDim == 3 ? point.altGPS : nil),
      let ele = XMLText.decimal(altitude, places: 1)
    {
      text += "    <ele>\(ele)</ele>\n"
    }
    text += "    <time>\(XMLText.time(point.wall))</time>\n"
    text += Self.extensions(point)
    text += "   </trkpt>\n"
    trackPoints += 1
    return Array(text.utf8)
  }

  /// The point's `extensions`, or nothing when it has none of their values.
  static func extensions(_ point: PointRecord) -> String {
    var inside = ""
    if let watts = point.power.flatMap({ XMLText.integer(Double($0), in: 0...65_535) }) {
      inside += "     <pwr:PowerInWatts>\(watts)</pwr:PowerInWatts>\n"
    }
    // TrackPointExtension v1 XSD, TrackPointExtension_t: atemp, wtemp, depth, hr, cad;
    // hr is 1…255 and cad 0…254 by its types.
    var tpx = ""
    if let atemp = point.temperature.flatMap({ XMLText.decimal($0, places: 1) }) {
      tpx += "      <gpxtpx:atemp>\(atemp)</gpxtpx:atemp>\n"
    }
    if let hr = point.hr.flatMap({ XMLText.integer(Double($0), in: 1...255) }) {
      tpx += "      <gpxtpx:hr>\(hr)</gpxtpx:hr>\n"
    }
    if let cad = point.cadence.flatMap({ XMLText.integer($0, in: 0...254) }) {
      tpx += "      <gpxtpx:cad>\(cad)</gpxtpx:cad>\n"
    }
    if !tpx.isEmpty {
      inside += "     <gpxtpx:TrackPointExtension>\n" + tpx + "     </gpxtpx:TrackPointExtension>\n"
    }
    return inside.isEmpty ? "" : "    <extensions>\n" + inside + "    </extensions>\n"
  }

  /// Closes the open segment, the track and the file.
  public mutating func finish() -> ActivityEncoderEnd {
    var text = openSegment != nil ? "  </trkseg>\n" : ""
    text += " </trk>\n</gpx>\n"
    return ActivityEncoderEnd(tail: Array(text.utf8), points: trackPoints)
  }
}
