import ArgumentParser
import Foundation
import WorkoutControl
import WorkoutCore

struct Sensors: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract:
      "BLE and ANT+ sensors: find the straps, power meters and speed/cadence pods around, and choose them.",
    subcommands: [List.self, Scan.self, Add.self, Remove.self])

  static func printList(_ sensors: [SensorEntryReport]) {
    guard !sensors.isEmpty else {
      print("no sensors (workoutctl sensors scan, then workoutctl sensors add ADDRESS)")
      return
    }
    for sensor in sensors {
      print(
        "\(sensor.role.padding(toLength: 13, withPad: " ", startingAt: 0)) \(sensor.address) (\(sensor.addressType))  from the \(sensor.origin == "configuration" ? "configuration file" : "workoutctl")"
      )
    }
  }

  struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "The sensors the service runs, and where each was chosen (their condition: workoutctl status).")
    @OptionGroup var locations: Locations
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
      let reply = try request(ControlRequest(command: .listSensors), to: locations, timeout: 20)
      if json {
        print(try ControlJSON.encode(reply.sensors ?? []))
      } else {
        Sensors.printList(reply.sensors ?? [])
      }
    }
  }

  struct Add: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract:
        "Choose a sensor: connected at once, kept for the next start (over the configuration file's for its role).",
      discussion:
        "What a BLE sensor is (heart rate, power, speed/cadence) is known from the last scan; otherwise give --role. An ANT+ sensor is ant:DEVICE_NUMBER (or ant:any, the first found) with --role, or with its profile: ant:heart_rate:4242, ant:power:5151, ant:speed:17. One sensor per role: adding one replaces the one before."
    )
    @OptionGroup var locations: Locations
    @Argument(help: "Its address, or ant:NUMBER for an ANT+ sensor, as sensors scan shows it.") var address: String
    @Option(help: "heart_rate, power or speed_cadence.") var role: String?
    @Option(help: "public or random (default: as the scan heard it).") var type: String?

    func run() throws {
      let reply = try request(
        ControlRequest(command: .addSensor, address: address, addressType: type, role: role), to: locations, timeout: 20
      )
      print(reply.message ?? "added")
    }
  }

  struct Remove: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Stop using a sensor (also one the configuration file names), now and at the next start.")
    @OptionGroup var locations: Locations
    @Argument(help: "Its address, or ant:NUMBER.") var address: String

    func run() throws {
      let reply = try request(ControlRequest(command: .removeSensor, address: address), to: locations, timeout: 20)
      print(reply.message ?? "removed")
    }
  }

  struct Scan: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Scan for heart-rate, cycling-power and speed/cadence sensors (the service scans: it has the rights).",
      discussion:
        "Wake the sensor first (wear the strap, turn the crank). Lists each sensor heard, strongest first, with the line that names it in [sensors] of the configuration file."
    )
    @OptionGroup var locations: Locations
    @Option(help: "How long to scan, seconds (1-60).") var seconds: Double = 10
    @Flag(help: "List every LE device heard, not only sensors.") var all = false
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
      let scanRequest = ControlRequest(command: .scanSensors, seconds: seconds, allDevices: all)
      if !json {
        FileHandle.standardError.write(Data("scanning for \(Int(scanRequest.scanSeconds)) s...\n".utf8))
      }
      let reply = try request(
        scanRequest, to: locations, timeout: scanRequest.scanSeconds + 15, refused: "the scan failed")
      guard let scan = reply.scan else { throw fail("the scan failed") }
      if json {
        print(try ControlJSON.encode(scan))
        return
      }
      let shared = scan.sharedDiscovery ? " (discovery was already running for another client: its results)" : ""
      print("\(scan.controller), \(wholeNumberText(scan.seconds)) s\(shared)")
      if let antStick = scan.antStick { print("ANT stick: \(antStick)") }
      guard !scan.devices.isEmpty else {
        print(
          all
            ? "no LE device heard"
            : "no heart-rate, power or speed/cadence sensor heard (is it awake? --all lists every device)")
        return
      }
      let rows = scan.devices.map { device in
        [
          device.address, device.addressType, device.rssi.map { "\($0) dBm" } ?? "-",
          device.sensors.isEmpty ? "-" : device.sensors.joined(separator: ", "),
          // The name is whatever the device advertises.
          device.name.map(TerminalText.escaped) ?? "-",
        ]
      }
      let header = ["ADDRESS", "TYPE", "RSSI", "SENSOR", "NAME"]
      let widths = (0..<header.count).map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
      for row in [header] + rows {
        print(
          row.enumerated().map { index, cell in
            index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
          }.joined(separator: "  "))
      }
      if let strap = scan.devices.first(where: { $0.sensors.contains("heart rate") }) {
        print(
          "\nto record it: workoutctl sensors add \(strap.address) (or, in [sensors] of the configuration file: heart_rate = \"\(Self.configValue(strap))\")"
        )
      }
    }

    /// The address as `[sensors]` takes it: with its type when the address alone would be read
    /// as the other one (a random static address has its two top bits set).
    static func configValue(_ device: SensorScanReport.Device) -> String {
      if device.addressType == "ant+" { return device.address }
      let first = UInt8(device.address.prefix(2), radix: 16) ?? 0
      let guessed = first & 0xC0 == 0xC0 ? "random" : "public"
      return guessed == device.addressType ? device.address : "\(device.address)/\(device.addressType)"
    }
  }
}
