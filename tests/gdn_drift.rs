//! The f16-storage drift test on the CPU (the CI half of issue 5's drift check): 4,096
//! synthetic decode steps through the CPU op with the state stored as f16, against f32
//! storage, at width 1 and width 4 (tokens per step). Fails above 1% worst relative error
//! or when the error grows over the run.

use ninfer::ops::gdn::drift::{cpu_drift, DRIFT_LIMIT};
use ninfer::ops::gdn::GdnDims;

#[test]
fn f16_state_drift_stays_flat_and_under_one_percent() {
    let d = GdnDims::new(2, 4, 32, 32);
    for width in [1, 4] {
        let r = cpu_drift(&d, 4096, width, 0x6d6e + width as u64);
        println!("cpu drift {}: {}", d.describe(), r.line());
        assert!(r.worst > 0.0, "f16 storage must differ from f32 somewhere");
        assert!(r.worst <= DRIFT_LIMIT, "{}", r.line());
        assert!(r.pass, "{}", r.line());
    }
}
