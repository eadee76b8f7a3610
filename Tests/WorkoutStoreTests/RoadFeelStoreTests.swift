import Foundation
import GRDB
import Testing
import WorkoutCore

@testable import WorkoutStore

/// The road's feel of each recorded second (migration v13): the inertial sensor's vibration
/// and peak acceleration are kept with the point, and points of earlier releases have none.
struct RoadFeelStoreTests {
  @Test func vibrationAndPeakAccelerationAreKeptWithThePoint() throws {
    let dir = TemporaryDirectory()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    try recordRide(into: store, seconds: 2)
    let last = try #require(try store.points(sessionID: 1).last)
    #expect(last.vibration == nil && last.peakAcceleration == nil, "no inertial sensor in the ride")
    var point = last.trackPoint
    point.sequence += 1
    point.vibration = 2.375
    point.peakAcceleration = 31.25
    try store.write([.recordPoint(sessionID: 1, point)], clock: testClock)
    let read = try #require(try store.points(sessionID: 1).last)
    #expect(read.seq == point.sequence)
    #expect(read.vibration == 2.375 && read.peakAcceleration == 31.25)
    #expect(read.trackPoint == point)
  }

  /// A database the migrations left at v12, with a ride in it, opens: v13 adds the columns, and
  /// the old points read as having no road's feel.
  @Test func aVersion12DatabaseGetsTheColumnsAndItsPointsReadNone() throws {
    let dir = TemporaryDirectory()
    do {
      let queue = try DatabaseQueue(path: dir.database)
      try Schema.migrator.migrate(queue, upTo: "v12: a target's first session, a platform's retry time")
      try queue.write { db in
        try db.execute(
          sql: """
            INSERT INTO session (id, uuid, activity, state, opened_wall, start_wall, end_wall, snapshot,
              clock_epoch, clock_monotonic, clock_wall, clock_wall_trusted)
            VALUES (1, '00000000-0000-4000-8000-000000000001', 'ride', 'ended', 1000, 1000, 1010, '',
              'old-boot', 10, 1010, 1)
            """)
        for seq in 0..<3 {
          try db.execute(
            sql: """
              INSERT INTO point (session_id, seq, wall, monotonic, elapsed, timer, distance, speed, wheel_speed)
              VALUES (1, ?, ?, ?, ?, ?, ?, 5, 5)
              """,
            arguments: [seq, 1000 + seq, seq, seq, seq, 5 * seq])
        }
      }
      let columns = try queue.read { db in try db.columns(in: "point").map(\.name) }
      #expect(!columns.contains("vibration") && !columns.contains("peak_acceleration"))
    }
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 2000)
    let columns = try DatabaseQueue(path: dir.database).read { db in try db.columns(in: "point").map(\.name) }
    #expect(columns.contains("vibration") && columns.contains("peak_acceleration"), "v13 applied on open")
    let points = try store.points(sessionID: 1)
    #expect(points.count == 3)
    #expect(points.allSatisfy { $0.vibration == nil && $0.peakAcceleration == nil && $0.wheelSpeed == 5 })
  }
}
