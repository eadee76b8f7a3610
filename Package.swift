// swift-tools-version:6.0
// workoutd: a crash-safe workout and ride logger for Raspberry Pi-class Linux boards.
// Layering (see docs/ARCHITECTURE.md): WorkoutCore is pure (no clock reads, no I/O);
// SensorProtocols holds pure decoders; WorkoutStore owns SQLite; LinuxSupport wraps syscalls;
// BoardLinux and BoardSim are the two boards behind the same seams; WorkoutDaemon wires them
// together.
import PackageDescription

/// Our C is built with glibc's buffer-overflow checks in release builds (as Debian builds C).
let fortified: [CSetting] = [.define("_FORTIFY_SOURCE", to: "2", .when(configuration: .release))]

let package = Package(
  name: "workoutd",
  products: [
    .executable(name: "workoutd", targets: ["workoutd"]),
    .executable(name: "workoutctl", targets: ["workoutctl"]),
  ],
  dependencies: [
    .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
    .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
    .package(url: "https://github.com/LebJe/TOMLKit", exact: "0.6.0"),
    .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
  ],
  targets: [
    .target(name: "WorkoutCore"),
    // The phone page's HTTP: request parsing, responses, pairing codes and tokens (pure).
    .target(name: "WorkoutWeb"),
    .target(name: "SensorProtocols", dependencies: ["WorkoutCore"]),
    .target(
      name: "WorkoutStore",
      dependencies: [
        "WorkoutCore", "LinuxSupport", "WorkoutUpload", .product(name: "GRDB", package: "GRDB.swift"),
        .product(name: "GRDBSQLite", package: "GRDB.swift"), "CSQLiteSetup",
      ]
    ),
    // SQLite's process-wide settings (sqlite3_config, run before main); libsqlite3-dev.
    .target(name: "CSQLiteSetup", cSettings: fortified, linkerSettings: [.linkedLibrary("sqlite3")]),
    // Rides in the formats riders' platforms read (FIT), made from the store as points stream.
    .target(name: "WorkoutExport", dependencies: ["WorkoutCore", "WorkoutStore", "LinuxSupport"]),
    // A stored session's summary, time in zone and metrics, as `show` and the ride page give them.
    .target(name: "WorkoutReports", dependencies: ["WorkoutCore", "WorkoutStore"]),
    .target(name: "CLinuxShims", cSettings: fortified),
    // libgps from Debian's libgps-dev: gpsd 3.22 (API major 11, bookworm) or 3.25 (API 14, trixie).
    // Only the tests link it: they check our gpsd JSON decoder against libgps's own, line by line.
    .systemLibrary(name: "CGPS", pkgConfig: "libgps", providers: [.apt(["libgps-dev"])]),
    // libqrencode (libqrencode-dev): the pairing QR code `workoutctl pair` prints.
    .systemLibrary(name: "CQRencode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),
    // libgpiod 1.6 (v1 API, bookworm) or 2.x (v2 API, trixie) behind one small C API.
    .target(name: "CGPIOD", cSettings: fortified, linkerSettings: [.linkedLibrary("gpiod")]),
    // L2CAP LE sockets for BLE sensors: BlueZ's headers (libbluetooth-dev), no library linked.
    .target(name: "CBluetooth", cSettings: fortified),
    .target(name: "LinuxSupport", dependencies: ["CLinuxShims"]),
    // The system's OpenSSL 3, loaded when the phone page's TLS is first wanted (libssl-dev's
    // headers; libssl3 at run time).
    .target(name: "CTLS", cSettings: fortified),
    .target(name: "WebTLS", dependencies: ["CTLS", "LinuxSupport"]),
    .target(name: "WorkoutControl", dependencies: ["WorkoutCore", "LinuxSupport", "WorkoutUpload"]),
    // Rides sent to the rider's platforms: the queue's jobs and each platform's protocol (pure).
    .target(name: "WorkoutUpload"),
    // The system's libcurl, loaded when an upload is first sent (libcurl4-openssl-dev's headers;
    // libcurl4 at run time).
    .target(name: "CCurl", cSettings: fortified),
    // The uploader's HTTP client: a conversation's requests sent through libcurl.
    .target(name: "UploadHTTP", dependencies: ["CCurl", "LinuxSupport", "WorkoutUpload"]),
    .target(name: "BoardSim", dependencies: ["WorkoutCore", "LinuxSupport"]),
    .target(
      name: "BoardLinux",
      dependencies: [
        "WorkoutCore", "SensorProtocols", "LinuxSupport", "CGPIOD", "CLinuxShims", "CBluetooth",
      ]),
    .target(
      name: "WorkoutDaemon",
      dependencies: [
        "WorkoutCore", "WorkoutStore", "WorkoutControl", "WorkoutExport", "LinuxSupport", "BoardSim", "BoardLinux",
        "SensorProtocols", "WorkoutWeb", "WorkoutReports", "WebTLS", "WorkoutUpload", "UploadHTTP",
        .product(name: "TOMLKit", package: "TOMLKit"),
        .product(name: "Logging", package: "swift-log"),
      ]
    ),
    .executableTarget(
      name: "workoutd",
      dependencies: [
        "WorkoutDaemon", "UploadHTTP", "BoardLinux", .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "Logging", package: "swift-log"),
      ]
    ),
    // make bench: our GPS client's per-fix cost against gpsd's own gpxlogger.
    .executableTarget(
      name: "gps-bench", dependencies: ["BoardLinux", "SensorProtocols", "WorkoutCore"], path: "Benchmarks/GPS",
      exclude: ["bench.py"]),
    // make bench: what a heart-rate strap and a power meter cost, per notification and per second.
    .executableTarget(
      name: "strap-bench",
      dependencies: [
        "BoardLinux", "SensorProtocols", "WorkoutCore", "WorkoutStore", "LinuxSupport", "WorkoutTestSupport",
        "CLinuxShims",
      ],
      path: "Benchmarks/Strap"),
    // make bench: what an ANT stick with a heart-rate strap and a power meter costs, per message
    // and per second.
    .executableTarget(
      name: "ant-bench",
      dependencies: ["BoardLinux", "SensorProtocols", "WorkoutCore", "LinuxSupport", "WorkoutTestSupport"],
      path: "Benchmarks/ANT"),
    // make bench: what the inertial sensor at 100 Hz costs, per record and per second.
    .executableTarget(
      name: "imu-bench",
      dependencies: ["BoardLinux", "WorkoutCore", "LinuxSupport", "WorkoutTestSupport", "CLinuxShims"],
      path: "Benchmarks/IMU"),
    // make bench: the downloads' 12-hour ride, stored for the release build to serve.
    .executableTarget(
      name: "ride-bench", dependencies: ["WorkoutCore", "WorkoutStore", "WorkoutTestSupport"],
      path: "Benchmarks/Ride"),
    .executableTarget(
      name: "workoutctl",
      dependencies: [
        "WorkoutCore", "WorkoutStore", "WorkoutExport", "WorkoutControl", "LinuxSupport", "CQRencode", "WorkoutReports",
        "WorkoutUpload", .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ]
    ),
    // Test helpers shared by the test targets and the benchmarks (a manual-clock engine driver,
    // scripted sensors and an ANT stick behind the board's seams).
    .target(
      name: "WorkoutTestSupport",
      dependencies: [
        "WorkoutCore", "SensorProtocols", "CLinuxShims", "LinuxSupport", "BoardLinux",
        .product(name: "GRDB", package: "GRDB.swift"),
      ], path: "Tests/Support"
    ),
    .testTarget(name: "WorkoutCoreTests", dependencies: ["WorkoutCore", "WorkoutTestSupport"]),
    .testTarget(name: "WorkoutWebTests", dependencies: ["WorkoutWeb"]),
    .testTarget(name: "WorkoutUploadTests", dependencies: ["WorkoutUpload"]),
    // Strava's conversation and login against scripted replies, and its fake server (Python).
    .testTarget(name: "StravaTests", dependencies: ["WorkoutUpload"]),
    .testTarget(
      name: "WorkoutStoreTests",
      dependencies: [
        "WorkoutStore", "WorkoutCore", "WorkoutTestSupport", "WorkoutUpload",
        .product(name: "GRDB", package: "GRDB.swift"),
      ]),
    .testTarget(
      name: "WorkoutExportTests",
      dependencies: [
        "WorkoutExport", "WorkoutStore", "WorkoutCore", "WorkoutTestSupport",
        .product(name: "GRDB", package: "GRDB.swift"),
      ],
      exclude: ["read_fit.py", "requirements.txt", "xsd"]),
    .testTarget(
      name: "SensorProtocolsTests",
      dependencies: ["SensorProtocols", "WorkoutCore", "WorkoutTestSupport", "BLEFuzzChecks"]),
    // make fuzz: the properties the libFuzzer targets below check, which the unit tests run on
    // the seed corpora too.
    .target(
      name: "BLEFuzzChecks", dependencies: ["SensorProtocols", "WorkoutCore", "WorkoutWeb"], path: "Tests/Fuzz/Checks"),
    .testTarget(
      name: "BoardLinuxTests",
      dependencies: ["BoardLinux", "LinuxSupport", "SensorProtocols", "WorkoutCore", "WorkoutTestSupport", "CGPS"]),
    .testTarget(name: "BoardSimTests", dependencies: ["BoardSim", "WorkoutCore", "WorkoutTestSupport"]),
    .testTarget(
      name: "WorkoutDaemonTests",
      dependencies: [
        "WorkoutDaemon", "WorkoutCore", "WorkoutStore", "WorkoutControl", "WorkoutTestSupport", "SensorProtocols",
        "WorkoutWeb", "WebTLS", "WorkoutUpload", .product(name: "Logging", package: "swift-log"),
      ]),
    // The uploads' conversations, and the HTTP client against the fake platforms of
    // Tests/Platforms over HTTPS.
    .testTarget(
      name: "UploadTests", dependencies: ["UploadHTTP", "WorkoutUpload", "LinuxSupport", "WorkoutTestSupport"]),
    .testTarget(
      name: "IntegrationTests",
      dependencies: [
        "WorkoutStore", "WorkoutControl", "WorkoutCore", "LinuxSupport", "WorkoutTestSupport", "WorkoutUpload",
        .product(name: "GRDB", package: "GRDB.swift"),
      ],
      exclude: ["write_fit.py", "tls_client.py"]
    ),
  ]
    // make fuzz: libFuzzer targets for the BLE decoders, the speed/cadence calculators, the
    // ATT codec, the scan's management/advertising decoders, the web server's request parser,
    // gpsd's reports, the ANT frame reader and messages, and the ANT+ profiles' pages
    // (Tests/Fuzz/<name>); an ordinary build makes harmless executables of them.
    + [
      "fuzz-ble-heart-rate", "fuzz-ble-cycling-power", "fuzz-ble-csc", "fuzz-ble-readables", "fuzz-ble-revolutions",
      "fuzz-att-pdu", "fuzz-ble-scan", "fuzz-http-request", "fuzz-gpsd-json", "fuzz-ant-message", "fuzz-ant-pages",
    ].map { .executableTarget(name: $0, dependencies: ["BLEFuzzChecks"], path: "Tests/Fuzz/" + $0) },
  swiftLanguageModes: [.v6]
)
