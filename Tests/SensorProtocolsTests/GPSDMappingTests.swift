import Testing
import WorkoutCore

@testable import SensorProtocols

@Suite("gpsd TPV → GPSFix mapping")
struct GPSDMappingTests {
  private func snapshot(_ line: String) -> TPVSnapshot { GPSDJSON.tpv(from: line)! }

  @Test("no fix: mode 1 gives no fix and drops the time the receiver made up")
  func noFixDropsTime() {
    let tpv = snapshot(#"{"class":"TPV","mode":1,"time":"2024-06-09T00:07:06.000Z","ept":0.005}"#)
    #expect(tpv.fields.contains(.time))
    #expect(GPSDMapping.report(from: tpv) == .noFix(.noFix))
  }

  @Test("mode not seen, unknown modes, missing or impossible positions")
  func noFixReasons() {
    #expect(GPSDMapping.report(from: snapshot(#"{"class":"TPV"}"#)) == .noFix(.modeNotSeen))
    #expect(GPSDMapping.report(from: snapshot(#"{"class":"TPV","mode":0}"#)) == .noFix(.modeNotSeen))
    #expect(GPSDMapping.report(from: snapshot(#"{"class":"TPV","mode":7,"lat":1,"lon":2}"#)) == .noFix(.unknownMode(7)))
    #expect(GPSDMapping.report(from: snapshot(#"{"class":"TPV","mode":3,"lon":2}"#)) == .noFix(.positionMissing))
    #expect(GPSDMapping.report(from: snapshot(#"{"class":"TPV","mode":2,"lat":1}"#)) == .noFix(.positionMissing))
    #expect(
      GPSDMapping.report(from: snapshot(#"{"class":"TPV","mode":2,"lat":91,"lon":2}"#)) == .noFix(.positionOutOfRange))
    #expect(
      GPSDMapping.report(from: snapshot(#"{"class":"TPV","mode":2,"lat":9,"lon":-180.5}"#))
        == .noFix(.positionOutOfRange))
    // The set mask is what counts: a finite latitude without LATLON_SET is not a position.
    var tpv = snapshot(#"{"class":"TPV","mode":3,"lat":48,"lon":11}"#)
    tpv.fields.remove(.position)
    #expect(GPSDMapping.report(from: tpv) == .noFix(.positionMissing))
    tpv.fields.insert(.position)
    tpv.fields.remove(.mode)
    #expect(GPSDMapping.report(from: tpv) == .noFix(.modeNotSeen))
  }

  @Test("a 3D fix: MSL altitude, Doppler speed, track, errors, time")
  func threeD() throws {
    let tpv = snapshot(
      #"{"class":"TPV","mode":3,"time":"2019-04-06T23:57:28.020Z","lat":48.149963333,"lon":11.584666667,"altHAE":510.6,"altMSL":464.4,"epx":14.174,"epy":14.733,"epv":48.3,"track":370.5,"speed":0.051,"eph":26.6}"#
    )
    guard case .fix(let fix) = GPSDMapping.report(from: tpv) else {
      Issue.record("no fix")
      return
    }
    #expect(fix.dimension == .threeD)
    #expect(fix.time == 1_554_595_048.02)
    #expect(fix.altitude == 464.4)
    #expect(fix.speed == 0.051)
    #expect(abs(try #require(fix.track) - 10.5) < 1e-9)
    #expect(fix.horizontalError == 26.6)
    #expect(fix.verticalError == 48.3)
  }

  @Test("altitude only from 3D; HAE − geoid separation when MSL is missing")
  func altitude() throws {
    let twoD = snapshot(#"{"class":"TPV","mode":2,"lat":1,"lon":2,"altMSL":100}"#)
    guard case .fix(let fix2) = GPSDMapping.report(from: twoD) else { throw Failure.noFix }
    #expect(fix2.altitude == nil)
    let hae = snapshot(#"{"class":"TPV","mode":3,"lat":1,"lon":2,"altHAE":510.6,"geoidSep":46.2}"#)
    guard case .fix(let fix3) = GPSDMapping.report(from: hae) else { throw Failure.noFix }
    #expect(abs(try #require(fix3.altitude) - 464.4) < 1e-9)
    let haeOnly = snapshot(#"{"class":"TPV","mode":3,"lat":1,"lon":2,"altHAE":510.6}"#)
    guard case .fix(let fix4) = GPSDMapping.report(from: haeOnly) else { throw Failure.noFix }
    #expect(fix4.altitude == nil)
  }

  @Test("unknown and impossible values become nil, never NaN; eph falls back to epx/epy")
  func nanAndFallbacks() throws {
    var tpv = TPVSnapshot(fields: [.status, .mode, .position], mode: 2, latitude: 10, longitude: 20)
    tpv.speed = -1
    tpv.epx = 3
    tpv.epy = 4
    tpv.epv = .infinity
    guard case .fix(let fix) = GPSDMapping.report(from: tpv) else { throw Failure.noFix }
    #expect(fix.speed == nil)
    #expect(fix.track == nil)
    #expect(fix.time == nil)
    #expect(fix.horizontalError == 5)
    #expect(fix.verticalError == nil)
  }

  /// Finite values whose arithmetic leaves the range the mapping promises (found by the gpsd
  /// fuzz target's properties, `make fuzz`).
  @Test("extreme values: no infinite altitude or error, a track below 360")
  func extremes() throws {
    let line = #"{"class":"TPV","mode":3,"lat":1,"lon":2,"altHAE":1e308,"geoidSep":-1e308,"#
    guard case .fix(let far) = GPSDMapping.report(from: snapshot(line + #""epx":1e200,"epy":1e200}"#)) else {
      throw Failure.noFix
    }
    #expect(far.altitude == nil)
    #expect(abs(try #require(far.horizontalError) / (1e200 * 2.0.squareRoot()) - 1) < 1e-15)
    let huge = snapshot(#"{"class":"TPV","mode":2,"lat":1,"lon":2,"epx":1.7e308,"epy":1.7e308,"track":-1e-20}"#)
    guard case .fix(let beyond) = GPSDMapping.report(from: huge) else { throw Failure.noFix }
    #expect(beyond.horizontalError == .greatestFiniteMagnitude)
    #expect(beyond.track == 0)
    let west = snapshot(#"{"class":"TPV","mode":2,"lat":1,"lon":2,"track":-90}"#)
    guard case .fix(let heading) = GPSDMapping.report(from: west) else { throw Failure.noFix }
    #expect(heading.track == 270)
  }

  @Test("every TPV of every capture: fixes only from mode 2/3 with a position, nothing NaN")
  func allCaptures() throws {
    var fixes = 0
    var noFixesWithTime = 0
    for name in GPSDCaptures.names {
      for tpv in try GPSDCaptures.chkTPVs(name) {
        switch GPSDMapping.report(from: tpv) {
        case .fix(let fix):
          fixes += 1
          #expect(tpv.mode >= 2 && tpv.latitude.isFinite && tpv.longitude.isFinite)
          let values = [fix.time, fix.altitude, fix.speed, fix.track, fix.horizontalError, fix.verticalError]
          #expect(values.allSatisfy { $0 == nil || $0!.isFinite }, "\(name)")
          if fix.dimension == .twoD { #expect(fix.altitude == nil) }
        case .noFix:
          #expect(tpv.mode < 2 || !tpv.latitude.isFinite || !tpv.longitude.isFinite, "\(name)")
          if tpv.time != nil { noFixesWithTime += 1 }
        }
      }
    }
    // The corpus holds 2,6xx position TPVs, and no-fix TPVs that carry a time (whose time
    // must not leak into any fix).
    #expect(fixes > 2_500)
    #expect(noFixesWithTime > 100)
  }

  enum Failure: Error { case noFix }
}
