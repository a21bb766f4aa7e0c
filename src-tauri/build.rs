fn main() {
    // Listing each command lets capabilities name exactly what the window may call.
    tauri_build::try_build(tauri_build::Attributes::new().app_manifest(tauri_build::AppManifest::new().commands(&["app_info"])))
        .expect("tauri build script");
}
