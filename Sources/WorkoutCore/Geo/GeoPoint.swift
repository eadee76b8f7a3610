#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A position on the WGS84 ellipsoid, in degrees.
public struct GeoPoint: Sendable, Hashable, Codable {
  public var latitude: Double
  public var longitude: Double

  public init(latitude: Double, longitude: Double) {
    self.latitude = latitude
    self.longitude = longitude
  }

  /// Mean Earth radius (IUGG R1), metres: the sphere that best fits WGS84 for short distances.
  public static let earthRadius = 6_371_008.8

  /// Great-circle distance in metres (haversine: well conditioned for the few metres
  /// between consecutive 1 Hz fixes, where the law of cosines loses precision).
  public func distance(to other: GeoPoint) -> Double {
    let lat1 = latitude * .pi / 180
    let lat2 = other.latitude * .pi / 180
    let dLat = lat2 - lat1
    let dLon = (other.longitude - longitude) * .pi / 180
    let h = sin(dLat / 2) * sin(dLat / 2) + cos(lat1) * cos(lat2) * sin(dLon / 2) * sin(dLon / 2)
    return 2 * GeoPoint.earthRadius * asin(min(1, h.squareRoot()))
  }
}
